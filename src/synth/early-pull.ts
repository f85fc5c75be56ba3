/**
 * Pod Security for early pullers, whose namespace enforces `privileged`: this admission policy
 * holds every pod there to restricted, and a host-network pod to the early-puller shape, running
 * only prewarm's code (docs/architecture.md#early-pullers-the-network-start-up-window). The shape
 * comes first, as the apiserver reports the first failing validation.
 */
import { ApiObject, Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { SLEEPER_CONFIGMAP_PREFIX } from './naming.js';
import { ACCESS_NAMES } from '../contract/access-names.js';
import {
  LABEL_COMPONENT,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_NAMESPACE_NAME,
  LABEL_PART_OF,
  LABEL_PULLER,
  MANAGED_BY,
} from '../contract/names.js';
import type { Pool } from '../imagecache/model.js';
import { celList, celString } from './access.js';
import { RUN_AS_USER } from './security.js';
import { HELPER_COMMAND, HELPER_MOUNT, HELPER_SLEEP_COMMAND, SLEEPER_COMMAND } from './pull-daemonset.js';
import { sleeperConfigMap } from './sleeper.js';

export interface EarlyPullAdmissionProps {
  /** The owned namespaces that hold early-pull pools; never empty. */
  readonly namespaces: readonly string[];
  /** The helper image of the invocation, canonical: the only image whose own binary may run. */
  readonly helperImage: string;
}

/** Volume types Pod Security restricted allows (without `image`, see above). */
const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
/** SELinux types Pod Security baseline allows. */
const SELINUX_TYPES = ['container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'];

const LABELS = {
  [LABEL_MANAGED_BY]: MANAGED_BY,
  [LABEL_NAME]: 'prewarm',
  [LABEL_PART_OF]: 'prewarm',
  [LABEL_COMPONENT]: 'early-pull-admission',
};

const POD_SC = 'object.spec.securityContext';
/** Whether the pod's securityContext sets `field`. */
const podHas = (field: string): string => `has(${POD_SC}) && has(${POD_SC}.${field})`;
/** Whether container `c`'s securityContext sets `field`. */
const cHas = (field: string): string => `has(c.securityContext) && has(c.securityContext.${field})`;
/** A field of container `c`'s securityContext, or the pod's value (a variable) when `c` leaves it out. */
const effective = (field: string, podValue: string): string => `(${cHas(field)} ? c.securityContext.${field} : ${podValue})`;
/** Container `c`'s seccomp profile type, or the pod's when `c` sets no profile. */
const seccompOf = `(${cHas('seccompProfile')} ? c.securityContext.seccompProfile.type : variables.podSeccomp)`;
/** `predicate` over every container, init container and ephemeral container. */
const everyContainer = (predicate: string): string => `variables.containers.all(c, ${predicate})`;
/** Holds for pods off the host network, and for those on it only when `predicate` does. */
const onHostNetwork = (predicate: string): string => `!variables.hostNetwork || (${predicate})`;

/** Baseline's remaining checks of one securityContext (`sc`, known to be set). */
function baselineContext(sc: string): string {
  return [
    `!(has(${sc}.windowsOptions) && has(${sc}.windowsOptions.hostProcess) && ${sc}.windowsOptions.hostProcess)`,
    `!(has(${sc}.seLinuxOptions) && (has(${sc}.seLinuxOptions.user) || has(${sc}.seLinuxOptions.role) || ` +
      `(has(${sc}.seLinuxOptions.type) && !(${sc}.seLinuxOptions.type in ${celList(SELINUX_TYPES)}))))`,
    `!(has(${sc}.appArmorProfile) && ${sc}.appArmorProfile.type == 'Unconfined')`,
  ].join(' && ');
}

/** Container `c` runs only prewarm's code: the helper's copy from `helperImage`, or a sleep from the mount. */
function runsOurCode(helperImage: string): string {
  const sleeps = [SLEEPER_COMMAND, HELPER_SLEEP_COMMAND].map((cmd) => `c.command == ${celList(cmd)}`).join(' || ');
  const mount = celString(HELPER_MOUNT);
  return (
    `has(c.command) && ((c.command == ${celList(HELPER_COMMAND)} && c.image == ${celString(helperImage)}) || ` +
    `((${sleeps}) && has(c.volumeMounts) && c.volumeMounts.exists(m, m.mountPath == ${mount} && !has(m.subPath) && !has(m.subPathExpr)) && ` +
    `c.volumeMounts.all(m, !m.mountPath.startsWith(${celString(`${HELPER_MOUNT}/`)})))) && ` +
    '(!has(c.args) || c.args.size() == 0) && !has(c.lifecycle) && !has(c.livenessProbe) && !has(c.readinessProbe) && !has(c.startupProbe)'
  );
}

/** A validation rule: a CEL expression and the message when it is false. */
type Rule = [expression: string, message: string];

function validations(helperImage: string): { expression: string; message: string; reason: 'Forbidden' }[] {
  const rules = [...earlyPullerRules(helperImage), ...restrictedRules()];
  return rules.map(([expression, message]) => ({ expression, message, reason: 'Forbidden' }));
}

/** What a pod on the host network must be: a prewarm early puller, as synth renders one. */
function earlyPullerRules(helperImage: string): Rule[] {
  const early = 'the host network is allowed here only for prewarm early pullers';
  return [
    [
      onHostNetwork(`has(object.metadata.labels) && ${celString(LABEL_PULLER)} in object.metadata.labels`),
      `${early}, labelled ${LABEL_PULLER}`,
    ],
    [
      onHostNetwork(everyContainer('!has(c.ports) || c.ports.size() == 0')),
      `${early}, which have no ports: on the host network a port is the node's`,
    ],
    [
      onHostNetwork('has(object.spec.automountServiceAccountToken) && !object.spec.automountServiceAccountToken'),
      `${early}, which mount no service-account token (automountServiceAccountToken: false)`,
    ],
    [
      onHostNetwork(
        `!has(object.spec.volumes) || object.spec.volumes.all(v, has(v.emptyDir) || (has(v.configMap) && v.configMap.name.startsWith(${celString(SLEEPER_CONFIGMAP_PREFIX)})))`,
      ),
      `${early}, which have only emptyDir volumes and prewarm's sleeper ConfigMap (no hostPath)`,
    ],
    [
      onHostNetwork(everyContainer(runsOurCode(helperImage))),
      `${early}, whose containers run only prewarm's sleep (from ${HELPER_MOUNT}) or copy it from the helper image ${helperImage}, with no arguments, hooks or probes`,
    ],
    [
      onHostNetwork(
        everyContainer(
          `${effective('runAsUser', 'variables.podUser')} == ${RUN_AS_USER} && ${effective('runAsNonRoot', 'variables.podNonRoot')}`,
        ),
      ),
      `${early}, which run as uid ${RUN_AS_USER} with runAsNonRoot: true`,
    ],
    [
      onHostNetwork(everyContainer(`${cHas('readOnlyRootFilesystem')} && c.securityContext.readOnlyRootFilesystem`)),
      `${early}, which have a read-only root filesystem`,
    ],
    [
      onHostNetwork(
        everyContainer(
          `${cHas('capabilities')} && (!has(c.securityContext.capabilities.add) || c.securityContext.capabilities.add.size() == 0)`,
        ),
      ),
      `${early}, which add no capabilities`,
    ],
    [onHostNetwork(everyContainer(`${seccompOf} == 'RuntimeDefault'`)), `${early}, which use seccomp RuntimeDefault`],
  ];
}

/** Pod Security restricted, for every pod of the namespace; earlyPullerRules governs the host network. */
function restrictedRules(): Rule[] {
  return [
    [
      '!(has(object.spec.hostPID) && object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC)',
      "pods here may not use the node's PID or IPC namespace",
    ],
    [everyContainer(`!(${cHas('privileged')} && c.securityContext.privileged)`), 'privileged containers are not allowed here'],
    [
      everyContainer(`${cHas('allowPrivilegeEscalation')} && !c.securityContext.allowPrivilegeEscalation`),
      'every container here must set allowPrivilegeEscalation: false',
    ],
    [
      everyContainer(
        `${cHas('capabilities')} && has(c.securityContext.capabilities.drop) && 'ALL' in c.securityContext.capabilities.drop && ` +
          `(!has(c.securityContext.capabilities.add) || c.securityContext.capabilities.add.all(a, a == 'NET_BIND_SERVICE'))`,
      ),
      'every container here must drop ALL capabilities and may add only NET_BIND_SERVICE',
    ],
    [
      `${everyContainer(effective('runAsNonRoot', 'variables.podNonRoot'))} && variables.podUser != 0 && ` +
        everyContainer(`!(${cHas('runAsUser')} && c.securityContext.runAsUser == 0)`),
      'every container here must run as non-root: runAsNonRoot: true, and runAsUser not 0',
    ],
    [
      everyContainer(`${seccompOf} in ['RuntimeDefault', 'Localhost']`),
      'every container here must use seccomp RuntimeDefault or Localhost',
    ],
    [
      `!has(object.spec.volumes) || object.spec.volumes.all(v, ${RESTRICTED_VOLUMES.map((t) => `has(v.${t})`).join(' || ')})`,
      `volumes here may only be of the types ${RESTRICTED_VOLUMES.join(', ')} (no hostPath)`,
    ],
    [everyContainer('!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)'), 'host ports are not allowed here'],
    [
      `!(${podHas('sysctls')} && ${POD_SC}.sysctls.size() > 0) && (!has(${POD_SC}) || (${baselineContext(POD_SC)})) && ` +
        everyContainer(
          `!has(c.securityContext) || ((!has(c.securityContext.procMount) || c.securityContext.procMount == 'Default') && ${baselineContext('c.securityContext')})`,
        ),
      'pods here may not set sysctls, an unmasked /proc, Windows host processes, SELinux users, roles or other types, or AppArmor Unconfined',
    ],
  ];
}

/** The admission policy of the early-pull namespaces, and its binding: both cluster-scoped. */
export class EarlyPullAdmission extends Construct {
  constructor(scope: Construct, id: string, props: EarlyPullAdmissionProps) {
    super(scope, id);
    const namespaces = [...new Set(props.namespaces)].sort();
    if (namespaces.length === 0) throw new Error('EarlyPullAdmission: namespaces must not be empty');
    this.node.addValidation({
      validate: () => {
        const ns = Chart.of(this).namespace;
        return ns
          ? [`EarlyPullAdmission must be placed in a chart without a namespace (found "${ns}"): it emits cluster-scoped objects`]
          : [];
      },
    });
    const name = ACCESS_NAMES.earlyPullPolicy;
    new ApiObject(this, 'policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: LABELS },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
            // `kubectl debug` adds a container to a running pod through this subresource.
            { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods/ephemeralcontainers'] },
          ],
        },
        variables: [
          {
            name: 'containers',
            expression:
              'object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : []) + ' +
              '(has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])',
          },
          { name: 'hostNetwork', expression: 'has(object.spec.hostNetwork) && object.spec.hostNetwork' },
          // -1: unset, so a container that sets none either runs as the image's user.
          { name: 'podUser', expression: `${podHas('runAsUser')} ? ${POD_SC}.runAsUser : -1` },
          { name: 'podNonRoot', expression: `${podHas('runAsNonRoot')} && ${POD_SC}.runAsNonRoot` },
          { name: 'podSeccomp', expression: `${podHas('seccompProfile')} ? ${POD_SC}.seccompProfile.type : ''` },
        ],
        validations: validations(props.helperImage),
      },
    });
    this.bindInNamespaces('policy-binding', name, namespaces);
    this.sleeperPolicy(namespaces);
  }

  /** Binds policy `name` to deny in `namespaces` only (by their `kubernetes.io/metadata.name`). */
  private bindInNamespaces(id: string, name: string, namespaces: readonly string[]): void {
    new ApiObject(this, id, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels: LABELS },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchExpressions: [{ key: LABEL_NAMESPACE_NAME, operator: 'In', values: namespaces }] } },
      },
    });
  }

  /** Only the sleeper synth renders may carry the sleeper ConfigMaps' name prefix. */
  private sleeperPolicy(namespaces: readonly string[]): void {
    const name = ACCESS_NAMES.sleeperPolicy;
    const sleeper = sleeperConfigMap();
    const binaryData = `{${Object.entries(sleeper.binaryData)
      .map(([arch, bytes]) => `${celString(arch)}: ${celString(bytes)}`)
      .join(', ')}}`;
    new ApiObject(this, 'sleeper-policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: LABELS },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }],
        },
        matchConditions: [{ name: 'sleeper', expression: `object.metadata.name.startsWith(${celString(SLEEPER_CONFIGMAP_PREFIX)})` }],
        validations: [
          {
            expression:
              `object.metadata.name == ${celString(sleeper.name)} && has(object.binaryData) && object.binaryData == ${binaryData} && ` +
              '(!has(object.data) || object.data.size() == 0)',
            message: `a ConfigMap named ${SLEEPER_CONFIGMAP_PREFIX}… here must be prewarm's sleeper ${sleeper.name}, unchanged: early pullers run it on the host network`,
            reason: 'Forbidden',
          },
        ],
      },
    });
    this.bindInNamespaces('sleeper-policy-binding', name, namespaces);
  }
}

/** The namespaces with early pullers (none without the sidecar), sorted. */
export function earlyPullNamespaces(pools: readonly Pool[], sidecar: boolean): string[] {
  if (!sidecar) return [];
  return [...new Set(pools.filter((p) => p.settings.earlyPull).map((p) => p.namespace))].sort();
}
