/** Certificates of the test cluster, made with openssl from one harness CA. */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR } from './config.js';
import { run } from './sh.js';

export const PKI_DIR = join(STATE_DIR, 'pki');
export const CA_CRT = join(PKI_DIR, 'ca.crt');
const CA_KEY = join(PKI_DIR, 'ca.key');

export interface CertSpec {
  /** File stem: <name>.crt / <name>.key */
  name: string;
  cn: string;
  orgs?: string[];
  dns?: string[];
  ips?: string[];
  usage: 'client' | 'server' | 'both';
}
export interface CertFiles {
  crt: string;
  key: string;
}

export function ensureCa(): void {
  mkdirSync(PKI_DIR, { recursive: true });
  if (existsSync(CA_CRT) && existsSync(CA_KEY)) return;
  run(['openssl', 'ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', CA_KEY]);
  run([
    'openssl', 'req', '-x509', '-new', '-key', CA_KEY, '-sha256', '-days', '3650',
    '-subj', '/CN=prewarm-test-ca', '-out', CA_CRT,
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
}

export function ensureCert(spec: CertSpec): CertFiles {
  ensureCa();
  const crt = join(PKI_DIR, `${spec.name}.crt`);
  const key = join(PKI_DIR, `${spec.name}.key`);
  if (existsSync(crt) && existsSync(key)) return { crt, key };
  const csr = join(PKI_DIR, `${spec.name}.csr`);
  const ext = join(PKI_DIR, `${spec.name}.ext`);
  run(['openssl', 'ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
  const subj = `/CN=${spec.cn}` + (spec.orgs ?? []).map((o) => `/O=${o}`).join('');
  run(['openssl', 'req', '-new', '-key', key, '-subj', subj, '-out', csr]);
  const eku = { client: 'clientAuth', server: 'serverAuth', both: 'serverAuth,clientAuth' }[spec.usage];
  const sans = [...(spec.dns ?? []).map((d) => `DNS:${d}`), ...(spec.ips ?? []).map((i) => `IP:${i}`)];
  writeFileSync(
    ext,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${eku}`,
      ...(sans.length ? [`subjectAltName=${sans.join(',')}`] : []),
    ].join('\n') + '\n',
  );
  run([
    'openssl', 'x509', '-req', '-in', csr, '-CA', CA_CRT, '-CAkey', CA_KEY, '-CAcreateserial',
    '-days', '3650', '-sha256', '-extfile', ext, '-out', crt,
  ]);
  return { crt, key };
}

/** RSA key pair for service-account tokens. */
/** The harness's admin client certificate (system:masters), made on first use. */
export function adminCert(): CertFiles {
  return ensureCert({ name: 'admin', cn: 'prewarm-admin', orgs: ['system:masters'], usage: 'client' });
}

export function ensureServiceAccountKeys(): { pub: string; key: string } {
  ensureCa();
  const key = join(PKI_DIR, 'sa.key');
  const pub = join(PKI_DIR, 'sa.pub');
  if (!existsSync(key)) {
    run(['openssl', 'genrsa', '-out', key, '2048']);
    run(['openssl', 'rsa', '-in', key, '-pubout', '-out', pub]);
  }
  return { pub, key };
}

/** A kubeconfig with a client certificate (file references, not embedded). */
export function writeKubeconfig(path: string, server: string, cert: CertFiles, user: string): void {
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: prewarm
  cluster:
    server: ${server}
    certificate-authority: ${CA_CRT}
users:
- name: ${user}
  user:
    client-certificate: ${cert.crt}
    client-key: ${cert.key}
contexts:
- name: prewarm
  context:
    cluster: prewarm
    user: ${user}
current-context: prewarm
`,
  );
}
