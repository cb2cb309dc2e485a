// What every simulated device shares: a serial wire, fault injection, an injected clock.
/** The device's end of a serial line. */
export interface Wire {
  write(data: Buffer): void;
  onData(cb: (data: Buffer) => void): void;
}

export interface Faults {
  /** Answer this much later. */
  delayMs: number;
  /** Answer nothing to this many requests. */
  drop: number;
  /** Answer this many requests with random bytes. */
  garbage: number;
  /** Send only the first half of this many answers. */
  partial: number;
  /** Corrupt the last byte (the CRC, for Modbus) of this many answers. */
  badCrc: number;
}

export const noFaults = (): Faults => ({ delayMs: 0, drop: 0, garbage: 0, partial: 0, badCrc: 0 });

export abstract class Simulator {
  faults: Faults = noFaults();
  requests = 0;
  private rx: Buffer = Buffer.alloc(0);
  private wire: Wire | undefined;

  constructor(protected readonly now: () => number = () => performance.now()) {}

  attach(wire: Wire): this {
    this.wire = wire;
    wire.onData((d) => this.receive(d));
    return this;
  }

  /** Frame the bytes received so far; return [answers, bytes consumed]. */
  protected abstract handle(rx: Buffer): { answers: Buffer[]; consumed: number };

  private receive(d: Buffer): void {
    this.rx = Buffer.concat([this.rx, d]);
    if (this.rx.length > 4096) this.rx = Buffer.alloc(0);
    const { answers, consumed } = this.handle(this.rx);
    this.rx = this.rx.subarray(consumed);
    for (const a of answers) this.answer(a);
  }

  /** Bytes that cannot be mistaken for an answer (deterministic, so tests are too). */
  protected garbageFor(a: Buffer): Buffer {
    const g = Buffer.alloc(a.length + 3, 0xa5);
    g[0] = 0xff;
    return g;
  }

  private answer(a: Buffer): void {
    this.requests++;
    const f = this.faults;
    if (f.drop > 0) return void f.drop--;
    let out = a;
    if (f.garbage > 0) {
      f.garbage--;
      out = this.garbageFor(a);
    } else if (f.partial > 0) {
      f.partial--;
      out = a.subarray(0, Math.max(1, a.length >> 1));
    } else if (f.badCrc > 0) {
      f.badCrc--;
      out = Buffer.from(a);
      out[out.length - 1] = out[out.length - 1]! ^ 0x5a;
    }
    const send = () => this.wire?.write(out);
    if (f.delayMs > 0) setTimeout(send, f.delayMs).unref();
    else send();
  }
}

/** Value moving toward a target at a rate per second, evaluated lazily on the clock. */
export class Ramp {
  private from: number;
  private target: number;
  private since: number;
  constructor(
    initial: number,
    private readonly perSecond: number,
    private readonly now: () => number,
  ) {
    this.from = this.target = initial;
    this.since = now();
  }
  get value(): number {
    const dt = (this.now() - this.since) / 1000;
    const d = this.target - this.from;
    const step = Math.min(Math.abs(d), this.perSecond * dt);
    return this.from + Math.sign(d) * step;
  }
  set(target: number): void {
    this.from = this.value;
    this.since = this.now();
    this.target = target;
  }
  get goal(): number {
    return this.target;
  }
}
