/**
 * Counting apiserver requests from the audit log the harness writes with `up({ auditLog: true })`
 * (Metadata level, RequestReceived omitted): a window is a byte range of the log, marked before
 * and after what is measured, so no clock comparison between this process and the apiserver.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';

/** The fields of an audit.k8s.io/v1 Event that the counts use. */
export interface AuditEvent {
  stage: string;
  verb: string;
  user?: { username?: string };
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
}

/** The harness's admin identity (admin client certificate CN), shared by kwok and the benchmark clients. */
const ADMIN_USER = 'prewarm-admin';

/** Current end of the log: a window boundary. */
export function auditMark(path: string): number {
  if (!existsSync(path))
    throw new Error(`no audit log at ${path}: bring the cluster up with the audit log (npm run cluster -- up --audit-log)`);
  return statSync(path).size;
}

/**
 * Each request once: a watch when it opens (ResponseStarted), anything else when it completes.
 * Counting a watch at ResponseComplete would count it in the window where it happened to close.
 */
export function isRequest(ev: AuditEvent): boolean {
  return ev.verb === 'watch' ? ev.stage === 'ResponseStarted' : ev.stage === 'ResponseComplete' || ev.stage === 'Panic';
}

/** Who made a request: the user, and for the shared admin identity its user agent's product. */
export function identity(ev: AuditEvent): string {
  const user = ev.user?.username ?? '?';
  return user === ADMIN_USER ? `${user} (${(ev.userAgent ?? '?').split('/')[0]})` : user;
}

/** "verb resource[/subresource]". */
export function operation(ev: AuditEvent): string {
  const r = ev.objectRef;
  return `${ev.verb} ${r?.resource ?? '(non-resource)'}${r?.subresource ? `/${r.subresource}` : ''}`;
}

/** Calls `each` for every request in [from, to) of the log; reads in chunks (the log can be large). */
export function forEachRequest(
  path: string,
  from: number,
  to: number,
  each: (ev: AuditEvent) => void,
): { requests: number; unparsed: number } {
  const fd = openSync(path, 'r');
  const chunk = Buffer.alloc(4 << 20);
  let pos = from;
  let rest = '';
  let requests = 0;
  let unparsed = 0;
  // A window may start inside a line only if it was marked mid-write; that line is the previous window's.
  let skipFirst = from > 0 && !endsWithNewline(fd, from);
  try {
    while (pos < to) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, to - pos), pos);
      if (n <= 0) break;
      pos += n;
      const lines = (rest + chunk.subarray(0, n).toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (skipFirst) {
          skipFirst = false;
          continue;
        }
        if (!line.trim()) continue;
        let ev: AuditEvent;
        try {
          ev = JSON.parse(line) as AuditEvent;
        } catch {
          unparsed++;
          continue;
        }
        if (!isRequest(ev)) continue;
        requests++;
        each(ev);
      }
    }
  } finally {
    closeSync(fd);
  }
  return { requests, unparsed };
}

function endsWithNewline(fd: number, offset: number): boolean {
  const b = Buffer.alloc(1);
  return readSync(fd, b, 0, 1, offset - 1) === 1 && b[0] === 0x0a;
}

/** Request counts of a window keyed by `key` (undefined: not counted). */
export function countRequests(path: string, from: number, to: number, key: (ev: AuditEvent) => string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  forEachRequest(path, from, to, (ev) => {
    const k = key(ev);
    if (k !== undefined) out.set(k, (out.get(k) ?? 0) + 1);
  });
  return out;
}
