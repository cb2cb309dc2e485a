// Content adaptation (papers 000/002, after Abdelzaher & Bhatti): the load monitor measures
// U = a·R + b·W (R requests/s, W bytes/s delivered), the utilisation controller moves the content
// level G ← clamp(G + k·(U* − U), 0, M), and the adaptor serves fractional G = I + F by client:
// hash the client address to N in [0,1), serve level I+1 if N < F else I — the same client stays
// on the same level. G = 0 refuses everything; G = M serves the best level. Pure.
import { createHash } from 'node:crypto';

export class LoadMonitor {
  private count = 0;
  private bytes = 0;
  record(bytes: number): void {
    this.count++;
    this.bytes += bytes;
  }
  /** U over the period just ended (and start the next). */
  take(periodMs: number, a: number, b: number): { U: number; R: number; W: number } {
    const s = periodMs / 1000;
    const R = this.count / s,
      W = this.bytes / s;
    this.count = 0;
    this.bytes = 0;
    return { U: a * R + b * W, R, W };
  }
}

export class UtilizationController {
  G: number;
  constructor(
    readonly M: number,
    readonly target: number,
    readonly k: number,
    initial = M,
  ) {
    this.G = initial;
  }
  step(U: number): number {
    this.G = Math.max(0, Math.min(this.M, this.G + this.k * (this.target - U)));
    return this.G;
  }
}

/** The client's position in [0,1): stable for an address. */
export function clientPosition(client: string): number {
  return createHash('sha256').update(client).digest().readUInt32BE(0) / 2 ** 32;
}

/** The level for this client at content level G (0 = refuse). */
export function levelFor(G: number, client: string, M: number): number {
  const I = Math.floor(G);
  const F = G - I;
  return Math.min(M, clientPosition(client) < F ? I + 1 : I);
}

/**
 * `ews calibrate`: a and b from measured capacities (Rmax, Wmax) at several content sizes, each
 * meaning 100% = a·Rmax + b·Wmax, by least squares.
 */
export function calibrate(points: ReadonlyArray<{ R: number; W: number }>): { a: number; b: number } {
  let rr = 0,
    rw = 0,
    ww = 0,
    r1 = 0,
    w1 = 0;
  for (const { R, W } of points) {
    rr += R * R;
    rw += R * W;
    ww += W * W;
    r1 += R;
    w1 += W;
  }
  const det = rr * ww - rw * rw;
  if (points.length < 2 || Math.abs(det) < 1e-12) throw new Error('calibration needs two or more content sizes with different throughputs');
  return { a: (r1 * ww - w1 * rw) / det, b: (w1 * rr - r1 * rw) / det };
}
