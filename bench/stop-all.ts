// Ending the processes a benchmark started: SIGTERM, then SIGKILL after a grace period.
import type { ChildProcess } from 'node:child_process';

export async function stopAll(procs: ChildProcess[], graceMs = 3000): Promise<void> {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((r) => {
          if (p.exitCode !== null || p.signalCode !== null) return r();
          p.once('exit', () => r());
          p.kill('SIGTERM');
          setTimeout(() => p.kill('SIGKILL'), graceMs).unref();
        }),
    ),
  );
}
