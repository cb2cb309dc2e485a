// The demo's pump (Modbus RTU, on b2) and valve (a line device, on b3) on real pseudo-terminals,
// their simulators on the other ends: a bundle-run board drives them through its own serialport.

import { demoDevices } from '../../dev/demo.ts';
import { ValveSimulator } from '../../dev/simulators/line-devices.ts';
import { PumpSimulator } from '../../dev/simulators/pump.ts';
import { ptyPair, ptyWire } from '../devices/pty.ts';

export async function ptyDevices(): Promise<{ devices: Array<Record<string, unknown>>; sims: { pump: PumpSimulator; valve: ValveSimulator }; close(): Promise<void> }> {
  const closers: Array<() => Promise<void>> = [];
  const ends: string[] = [];
  const sims = { pump: new PumpSimulator(1), valve: new ValveSimulator() };
  for (const sim of [sims.pump, sims.valve]) {
    const pty = await ptyPair();
    const wire = await ptyWire(pty.b);
    sim.attach(wire.wire);
    ends.push(pty.a);
    closers.push(async () => {
      await wire.close();
      await pty.kill();
    });
  }
  const [pump, valve] = demoDevices(['b1', 'b2', 'b3']) as Array<Record<string, unknown>>;
  const device = (d: Record<string, unknown>, board: string, port: string) => {
    const { simulate: _simulated, ...real } = d;
    return { ...real, attach: [{ board, port }] };
  };
  return {
    devices: [device(pump!, 'b2', ends[0]!), device(valve!, 'b3', ends[1]!)],
    sims,
    close: async () => {
      for (const f of closers) await f();
    },
  };
}
