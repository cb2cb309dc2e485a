// Serial ports answered by in-process simulators (serialport's mock binding): the demo's devices
// work with no hardware and no system packages. One simulator per port path, kept across reopens.

import type { PortFactory, PortLike } from '../node/devices/serial-line.ts';
import type { DeviceConfig } from '../shared/device-config.ts';
import { CounterSimulator, SensorSimulator, ValveSimulator } from './simulators/line-devices.ts';
import { PumpSimulator } from './simulators/pump.ts';
import type { Simulator } from './simulators/simulator.ts';

interface MockBinding {
  write(b: Buffer): Promise<void>;
  emitData(b: Buffer): void;
  isOpen: boolean;
}

export interface SimulatedPorts {
  factory: PortFactory;
  simulators: Map<string, Simulator>;
  /** Pull the device's cable: the port closes and cannot be opened until `plug`. */
  unplug(path: string): void;
  plug(path: string): void;
}

export function simulatedPortFactory(devices: readonly DeviceConfig[], board: number): SimulatedPorts {
  const simulators = new Map<string, Simulator>();
  const unplugged = new Set<string>();
  const open = new Map<string, PortLike>();
  for (const d of devices) {
    const at = d.attach.find((a) => a.board === board);
    if (!at || !d.simulate || simulators.has(at.port)) continue;
    const sim =
      d.simulate === 'pump'
        ? new PumpSimulator(d.driver === 'modbus-rtu' ? d.unitId : 1)
        : d.simulate === 'valve'
          ? new ValveSimulator(d.driver === 'line' ? d.eol : '\n')
          : d.simulate === 'counter'
            ? new CounterSimulator(d.driver === 'line' ? d.eol : '\n')
            : new SensorSimulator(d.driver === 'line' ? d.eol : '\n');
    simulators.set(at.port, sim);
  }
  let created = false;
  const factory: PortFactory = async (path, s) => {
    // Imported on first use (like the real binding), so boards without devices never load serialport.
    const { SerialPortMock } = await import('serialport');
    if (!created) {
      created = true;
      for (const p of simulators.keys()) SerialPortMock.binding.createPort(p, { echo: false, record: false });
    }
    const sim = simulators.get(path);
    if (!sim) throw new Error(`no simulator for ${path} (set "simulate" on its device)`);
    if (unplugged.has(path)) throw new Error(`${path}: no such device (unplugged)`);
    const port = new SerialPortMock({ path, baudRate: s.baudRate, autoOpen: false });
    open.set(path, port as unknown as PortLike);
    let binding: MockBinding | undefined;
    let onData: ((d: Buffer) => void) | undefined;
    port.on('open', () => {
      binding = (port as unknown as { port: MockBinding }).port;
      const write = binding.write.bind(binding);
      binding.write = async (b: Buffer) => {
        await write(b);
        setImmediate(() => onData?.(Buffer.from(b)));
      };
    });
    sim.attach({ write: (d) => (binding?.isOpen ? binding.emitData(d) : undefined), onData: (cb) => (onData = cb) });
    return port as unknown as PortLike;
  };
  return {
    factory,
    simulators,
    unplug(path) {
      unplugged.add(path);
      const p = open.get(path);
      if (p?.isOpen) p.close();
    },
    plug(path) {
      unplugged.delete(path);
    },
  };
}
