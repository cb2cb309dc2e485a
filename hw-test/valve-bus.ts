// The valve of the LAN tests: simulators on real ptys, the demo's valve device wired to ews2 and
// ews3 on the first two (a bus both boards reach); more ptys for devices a test adds. What the
// buses received is counted at the simulators, so it survives the boards' restarts.
import { demoDevices } from '../dev/demo.ts';
import { ValveSimulator } from '../dev/simulators/line-devices.ts';
import { type PtyPair, ptyPair, ptyWire } from '../test/devices/pty.ts';

export interface ValveBuses {
  readonly ptys: readonly PtyPair[];
  /** Commands the valve's two buses received. */
  executed(): number;
  /** The valve device (`valve3`), wired to ews2 and ews3, with `over` laid on it. */
  device(over?: Record<string, unknown>): Record<string, unknown>;
  close(): Promise<void>;
}

export async function valveBuses(n = 2): Promise<ValveBuses> {
  const ptys: PtyPair[] = [];
  const wires: Array<Awaited<ReturnType<typeof ptyWire>>> = [];
  const sims: ValveSimulator[] = [];
  for (let i = 0; i < n; i++) {
    const pty = await ptyPair();
    const wire = await ptyWire(pty.b);
    const sim = new ValveSimulator('\n');
    sim.attach(wire.wire);
    sims.push(sim);
    ptys.push(pty);
    wires.push(wire);
  }
  const valve = (demoDevices(['ews1', 'ews2', 'ews3']) as Array<Record<string, unknown>>)[1]!;
  return {
    ptys,
    executed: () => sims[0]!.commands + sims[1]!.commands,
    device: (over = {}) => ({
      ...valve,
      simulate: undefined,
      ...over,
      attach: [
        { board: 'ews2', port: ptys[0]!.a },
        { board: 'ews3', port: ptys[1]!.a },
      ],
    }),
    close: async () => {
      for (const w of wires) await w.close();
      for (const p of ptys) await p.kill();
    },
  };
}
