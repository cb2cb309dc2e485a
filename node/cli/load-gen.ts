// A closed-loop HTTP load generator over keep-alive, bounded in time and count: `ews calibrate`
// measures capacity with it, and the benchmarks their baselines.
import http from 'node:http';

export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  bytesPerS: number;
  p50Ms: number;
  p99Ms: number;
  statuses: Record<string, number>;
}

export async function closedLoop(url: string | URL, concurrency: number, seconds: number, headers: Record<string, string> = {}, maxRequests = 1_000_000): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const lat: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let issued = 0;
  let bytes = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  const one = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      const req = http.get(url, { agent, headers }, (res) => {
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => {
          statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
          if (res.statusCode === 200) lat.push(performance.now() - t0);
          else errors++;
          resolve();
        });
      });
      req.setTimeout(10_000, () => req.destroy());
      req.on('error', () => {
        errors++;
        resolve();
      });
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until && issued < maxRequests) {
        issued++;
        await one();
      }
    }),
  );
  const secs = (performance.now() - start) / 1000;
  agent.destroy();
  lat.sort((a, b) => a - b);
  const q = (p: number) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]! : NaN);
  return { requests: lat.length, errors, seconds: secs, rps: lat.length / secs, bytesPerS: bytes / secs, p50Ms: q(0.5), p99Ms: q(0.99), statuses };
}
