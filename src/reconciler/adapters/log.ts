/** JSON-lines logger to stderr (stdout stays unused: the sidecar has no data output). */
import type { Logger } from '../ports.js';

/** A {@link Logger} writing `{"ts","level","msg",...fields}` lines; `base` fields go on every line. */
export function jsonLogger(base: Record<string, unknown>, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const line = (level: string, msg: string, fields?: Record<string, unknown>): void => {
    const f: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields ?? {}))
      f[k] = v instanceof Error ? { name: v.name, message: v.message, ...('code' in v ? { code: (v as { code: unknown }).code } : {}) } : v;
    write(`${JSON.stringify({ ts: new Date().toISOString(), level, msg, ...base, ...f })}\n`);
  };
  return {
    info: (m, f) => line('info', m, f),
    warn: (m, f) => line('warn', m, f),
    error: (m, f) => line('error', m, f),
  };
}
