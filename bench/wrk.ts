// One wrk run (keep-alive connections, latency percentiles) read into numbers; non-2xx answers
// and socket errors count as errors and do not count as served.
import { spawn } from 'node:child_process';
import { loadSide } from './placement.ts';

export interface Wrk {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  requests: number;
}

/** `boardLike`: a board-like setup's load, on the load generator's CPU (bench/placement.ts). */
export function wrk(url: string, seconds: number, conns: number, boardLike = false): Promise<Wrk> {
  return new Promise((resolveRun, reject) => {
    const args = ['-t', '2', '-c', String(conns), '-d', `${seconds}s`, '--latency', '--timeout', '10s', url];
    const [cmd, argv] = loadSide('wrk', args, boardLike);
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c));
    p.on('error', reject);
    p.on('exit', () => {
      const ms = (s: string | undefined): number => {
        const m = /([\d.]+)(us|ms|s)/.exec(s ?? '');
        if (!m) return NaN;
        const v = Number(m[1]);
        return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
      };
      const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = non2xx + (sockErr ? sockErr.slice(1).reduce((n, x) => n + Number(x), 0) : 0);
      resolveRun({
        rps: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN) * (requests > 0 ? (requests - non2xx) / requests : 1)),
        p50Ms: +ms(/\s50%\s+(\S+)/.exec(out)?.[1]).toFixed(2),
        p99Ms: +ms(/\s99%\s+(\S+)/.exec(out)?.[1]).toFixed(2),
        errors,
        requests,
      });
    });
  });
}
