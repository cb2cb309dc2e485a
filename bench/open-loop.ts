// An open-loop load generator: requests leave at a fixed rate whatever the server does (a closed
// loop would slow down with the server and hide the overload). Each has a client timeout; a
// timed-out client goes away, as people do. Bounded in count and time.
import http from 'node:http';

export interface ClassResult {
  sent: number;
  ok: number;
  failed: number;
  timeouts: number;
  latencies: number[];
  /** When each of `latencies` was sent, in ms from the first request. */
  sentAtMs: number[];
  /** 503 answers (refused: admission, adaptation at level 0, a full queue). */
  refused: number;
  /** The content level of each 200 answer (X-EWS-Tree), where the server says. */
  levels: number[];
}

/** Results per class, and `elapsedS`: from the first request sent to the last answer or timeout. */
export async function openLoop(
  base: string,
  rate: number,
  seconds: number,
  pick: (i: number) => { cls: string; path: string; headers?: Record<string, string> },
  timeoutMs: number,
): Promise<{ classes: Record<string, ClassResult>; elapsedS: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const out: Record<string, ClassResult> = {};
  const total = Math.floor(rate * seconds);
  const start = performance.now();
  const inflight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const { cls, path, headers } = pick(i);
    out[cls] ??= { sent: 0, ok: 0, failed: 0, timeouts: 0, latencies: [], sentAtMs: [], refused: 0, levels: [] };
    const r = out[cls];
    r.sent++;
    const t0 = performance.now();
    inflight.push(
      new Promise<void>((resolve) => {
        const req = http.get(new URL(path, base), { agent, headers }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) {
              r.ok++;
              r.latencies.push(performance.now() - t0);
              r.sentAtMs.push(t0 - start);
              const level = Number(res.headers['x-ews-level']);
              if (level > 0) r.levels.push(level);
            } else {
              r.failed++;
              if (res.statusCode === 503) r.refused++;
            }
            resolve();
          });
        });
        let timedOut = false;
        req.setTimeout(timeoutMs, () => {
          timedOut = true;
          r.timeouts++;
          req.destroy();
        });
        req.on('error', () => {
          if (!timedOut) r.failed++;
          resolve();
        });
      }).then(() => {}),
    );
  }
  await Promise.all(inflight);
  agent.destroy();
  return { classes: out, elapsedS: (performance.now() - start) / 1000 };
}

export const pct = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};
