/**
 * The {@link Restarter} port over /proc. Needs the pod's `shareProcessNamespace: true` and every
 * container running as the same UID (the synthesized pod runs all as 65532), so the sidecar may
 * read other containers' /proc/<pid>/environ and signal them without any capability.
 *
 * The container is found by its environment: synthesis sets ENV.imageContainer to the container's
 * name on each image container. Its process is `busybox sleep`, which ignores SIGTERM, or the
 * sleeper (src/synth/sleeper.ts), which exits on it; we send SIGKILL, which ends either at once.
 * The kubelet then restarts the container per the pod's restartPolicy and, with
 * `imagePullPolicy: Always`, re-resolves the tag.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Restarter } from '../ports.js';
import { ENV } from '../../contract/names.js';

/** Restarts image containers by killing their process found in a shared PID namespace. */
export class ProcRestarter implements Restarter {
  constructor(
    private readonly procDir = '/proc',
    private readonly kill: (pid: number, sig: NodeJS.Signals) => void = (pid, sig) => process.kill(pid, sig),
  ) {}

  /** PIDs whose environment says they belong to `container`. */
  find(container: string): number[] {
    const want = `${ENV.imageContainer}=${container}`;
    const out: number[] = [];
    let entries: string[];
    try {
      entries = fs.readdirSync(this.procDir);
    } catch {
      return out;
    }
    for (const e of entries) {
      if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
      try {
        const env = fs.readFileSync(path.join(this.procDir, e, 'environ'), 'latin1').split('\0');
        if (env.includes(want)) out.push(Number(e));
      } catch {
        // gone, or not ours to read
      }
    }
    return out;
  }

  restart(container: string): Promise<boolean> {
    const pids = this.find(container);
    for (const pid of pids) {
      try {
        this.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    return Promise.resolve(pids.length > 0);
  }
}
