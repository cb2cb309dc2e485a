// A pump on Modbus RTU: coil 0 running, holding 1 speed (rpm, 0-3000), input 0 temperature
// (°C × 10, drifts toward 20 + speed/100 while running, back to 20 when stopped), discrete 0 fault.
import { parseRtuRequest, rtuReply } from '../../node/devices/modbus-rtu.ts';
import type { Reply, Request } from '../../shared/modbus-pdu.ts';
import { Ramp, Simulator } from './simulator.ts';

export class PumpSimulator extends Simulator {
  running = false;
  speed: number = 1200;
  writes = 0;
  private readonly temp: Ramp;

  constructor(
    readonly unitId = 1,
    now?: () => number,
  ) {
    super(now);
    this.temp = new Ramp(20, 0.5, this.now);
  }

  get temperature(): number {
    return this.temp.value;
  }

  protected handle(rx: Buffer): { answers: Buffer[]; consumed: number } {
    const answers: Buffer[] = [];
    let off = 0;
    for (;;) {
      const r = parseRtuRequest(rx.subarray(off));
      if (r.status === 'more') break;
      off += r.length;
      if (r.status === 'skip' || r.unit !== this.unitId) continue; // noise, or another unit on the bus
      answers.push(rtuReply(r.unit, r.req.fc, this.execute(r.req)));
    }
    return { answers, consumed: off };
  }

  private execute(req: Request): Reply {
    const ex = (code: number): Reply => ({ kind: 'exception', code });
    switch (req.fc) {
      case 1: // coils: 0 running
        return req.address + req.count > 1 ? ex(2) : { kind: 'bits', values: [this.running] };
      case 2: // discrete: 0 over-temperature
        return req.address + req.count > 1 ? ex(2) : { kind: 'bits', values: [this.temperature > 80] };
      case 3: {
        // holding: 1 speed (0 unused, reads 0)
        if (req.address + req.count > 2) return ex(2);
        const regs = [0, this.speed];
        return { kind: 'registers', values: regs.slice(req.address, req.address + req.count) };
      }
      case 4: // input: 0 temperature × 10
        return req.address + req.count > 1 ? ex(2) : { kind: 'registers', values: [Math.round(this.temperature * 10)] };
      case 5:
        if (req.address !== 0) return ex(2);
        this.writes++;
        this.running = req.value;
        this.drift();
        return { kind: 'written', address: req.address, value: req.value ? 0xff00 : 0 };
      case 6:
        if (req.address !== 1) return ex(2);
        if (req.value > 3000) return ex(3);
        this.writes++;
        this.speed = req.value;
        this.drift();
        return { kind: 'written', address: req.address, value: req.value };
      default:
        return ex(1);
    }
  }

  private drift(): void {
    this.temp.set(this.running ? 20 + this.speed / 100 : 20);
  }
}
