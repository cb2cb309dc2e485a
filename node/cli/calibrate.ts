// `ews calibrate` (paper 000): find a and b of U = a·R + b·W for this cluster. For each content
// size, raise the concurrency until throughput stops growing: that is (Rmax, Wmax) with
// 100% = a·Rmax + b·Wmax; then least squares over the sizes.
import { readFileSync, writeFileSync } from 'node:fs';
import { calibrate } from '../../master/qos/adaptation.ts';
import { closedLoop } from './load-gen.ts';

export interface CalibrationPoint {
  bytes: number;
  R: number;
  W: number;
  concurrency: number;
}

export async function measure(base: string, sizes: readonly number[], seconds: number, token?: string, log: (s: string) => void = () => {}): Promise<CalibrationPoint[]> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const points: CalibrationPoint[] = [];
  for (const size of sizes) {
    let best = { rps: 0, bytesPerS: 0, concurrency: 1 };
    for (let c = 1; c <= 64; c *= 2) {
      const t = await closedLoop(new URL(`/echo?ms=0&bytes=${size}`, base), c, seconds, headers);
      log(`  ${size} B × ${c} clients: ${t.rps.toFixed(0)} req/s${t.errors ? `, ${t.errors} errors` : ''}`);
      // Saturated: no longer 5% better, or connections failing.
      if (t.errors > 0 || t.rps < best.rps * 1.05) break;
      best = { rps: t.rps, bytesPerS: t.bytesPerS, concurrency: c };
    }
    points.push({ bytes: size, R: best.rps, W: best.bytesPerS, concurrency: best.concurrency });
  }
  return points;
}

export async function runCalibrate(
  url: string,
  opts: { write?: string; token?: string; seconds: number; sizes: number[] },
  out: (s: string) => void,
): Promise<{ a: number; b: number; points: CalibrationPoint[] }> {
  out(`calibrating ${url}: content sizes ${opts.sizes.join(', ')} bytes`);
  const points = await measure(url, opts.sizes, opts.seconds, opts.token, out);
  const fit = calibrate(points);
  // A noisy machine can tilt the fit below zero; neither cost can be negative.
  const a = Math.max(fit.a, 1e-6),
    b = Math.max(fit.b, 0);
  if (a !== fit.a || b !== fit.b) out(`(the fit gave a = ${fit.a.toExponential(3)}, b = ${fit.b.toExponential(3)}: clamped to non-negative costs; measure on a quieter machine)`);
  out(`a = ${a.toExponential(3)} s per request, b = ${b.toExponential(3)} s per byte`);
  if (opts.write) {
    const cfg = JSON.parse(readFileSync(opts.write, 'utf8')) as { qos?: { adaptation?: Record<string, unknown> } };
    cfg.qos = { ...cfg.qos, adaptation: { levels: 3, targetUtilization: 0.85, k: 1, ...cfg.qos?.adaptation, a: +a.toPrecision(4), b: +b.toPrecision(4) } };
    writeFileSync(opts.write, `${JSON.stringify(cfg, null, 2)}\n`);
    out(`written to ${opts.write} (qos.adaptation.a, .b)`);
  }
  return { a, b, points };
}
