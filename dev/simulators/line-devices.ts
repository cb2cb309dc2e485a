// Line-protocol devices: a valve whose position moves over time, and a temperature sensor.
import { LineSplitter } from '../../node/devices/line-splitter.ts';
import { Ramp, Simulator } from './simulator.ts';

abstract class LineSimulator extends Simulator {
  private readonly split: LineSplitter;
  constructor(
    private readonly eol: string,
    now?: () => number,
  ) {
    super(now);
    this.split = new LineSplitter(eol, 256);
  }
  protected handle(rx: Buffer): { answers: Buffer[]; consumed: number } {
    let lines: string[];
    try {
      lines = this.split.push(rx);
    } catch {
      lines = [];
    }
    return { answers: lines.filter((l) => l.length > 0).map((l) => Buffer.from(this.command(l.trim()) + this.eol, 'latin1')), consumed: rx.length };
  }
  protected abstract command(line: string): string;
  protected override garbageFor(a: Buffer): Buffer {
    return Buffer.concat([Buffer.alloc(a.length, 0xa5), Buffer.from(this.eol, 'latin1')]);
  }
}

/** POS? → "OK pos=N"; OPEN, CLOSE, POS n → "OK" (then the valve moves at 50 %/s). */
export class ValveSimulator extends LineSimulator {
  readonly position: Ramp;
  commands = 0;
  constructor(eol = '\n', now?: () => number) {
    super(eol, now);
    this.position = new Ramp(0, 50, this.now);
  }
  protected command(line: string): string {
    if (line === 'POS?') return `OK pos=${Math.round(this.position.value)}`;
    if (line === 'OPEN' || line === 'CLOSE') {
      this.commands++;
      this.position.set(line === 'OPEN' ? 100 : 0);
      return 'OK';
    }
    const m = /^POS (\d{1,3})$/.exec(line);
    if (m && Number(m[1]) <= 100) {
      this.commands++;
      this.position.set(Number(m[1]));
      return 'OK';
    }
    return `ERR unknown command ${line.slice(0, 40)}`;
  }
}

/** T? → "OK t=21.5": a room temperature that follows the wall clock, so two boards read the same. */
export class SensorSimulator extends LineSimulator {
  protected command(line: string): string {
    if (line !== 'T?') return 'ERR unknown command';
    const t = 21 + 2 * Math.sin(Date.now() / 60_000);
    return `OK t=${t.toFixed(1)}`;
  }
}

/** INC → "OK" (the count goes up by one); N? → "OK n=<count>". A tally an operator can press. */
export class CounterSimulator extends LineSimulator {
  count = 0;
  protected command(line: string): string {
    if (line === 'N?') return `OK n=${this.count}`;
    if (line === 'INC') {
      this.count++;
      return 'OK';
    }
    return `ERR unknown command ${line.slice(0, 40)}`;
  }
}
