// The devices attached to this board: a serial line and a worker per port, a driver per device,
// the last readings. Reads and actions go through the port's queue.
import { EventEmitter } from 'node:events';
import type { DeviceConfig } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import { readLine, sendLine } from './line-driver.ts';
import { type PointValue, readModbus, writeModbus } from './modbus-driver.ts';
import { PortWorker, type Priority } from './port-worker.ts';
import { type PortFactory, SerialLine } from './serial-line.ts';

export interface DeviceSnapshot {
  id: string;
  online: boolean;
  points: Record<string, PointValue>;
  updatedAt: number | null;
  error: string | null;
}
export interface ReadResult {
  result: Record<string, PointValue>;
  ms: number;
}
export interface ActionResult {
  result: Record<string, PointValue> | { reply: string };
  ms: number;
}

export interface DeviceManagerEvents {
  snapshot: [DeviceSnapshot];
}

export class DeviceManager extends EventEmitter<DeviceManagerEvents> {
  private readonly workers = new Map<string, PortWorker>();
  private readonly byDevice = new Map<string, { dev: DeviceConfig; worker: PortWorker; snap: DeviceSnapshot }>();
  /** "device action" -> times the device was actually driven (written to). */
  readonly actionCounts = new Map<string, number>();
  private readonly polls: NodeJS.Timeout[] = [];
  private readonly polling = new Set<string>();

  constructor(devices: readonly DeviceConfig[], board: number, factory: PortFactory, log: Logger, opts: { queueMax: number; backoffMaxMs: number }) {
    super();
    for (const dev of devices) {
      const at = dev.attach.find((a) => a.board === board);
      if (!at) continue;
      let worker = this.workers.get(at.port);
      if (!worker) {
        const line = new SerialLine(at.port, dev.serial, factory, log, 50, opts.backoffMaxMs);
        worker = new PortWorker(line, opts.queueMax);
        this.workers.set(at.port, worker);
      }
      const entry = { dev, worker, snap: { id: dev.id, online: false, points: {}, updatedAt: null, error: null } as DeviceSnapshot };
      this.byDevice.set(dev.id, entry);
      worker.line.on('online', () => this.update(entry, { online: true, error: null }));
      worker.line.on('offline', (reason) => this.update(entry, { online: false, error: `serial port ${reason}` }));
    }
  }

  start(): void {
    for (const w of this.workers.values()) w.line.start();
    // Each device is read every pollMs while online, behind control commands (scheduled priority),
    // at most one poll in flight per device.
    for (const e of this.byDevice.values()) {
      if (e.dev.pollMs <= 0) continue;
      const t = setInterval(() => this.poll(e.dev.id), e.dev.pollMs);
      t.unref();
      this.polls.push(t);
    }
  }
  stop(): void {
    for (const t of this.polls) clearInterval(t);
    this.polls.length = 0;
    for (const w of this.workers.values()) w.line.stop();
  }

  /** Read a device now unless it is offline or a poll is already on its way; failures show in its snapshot. */
  poll(id: string): void {
    const e = this.byDevice.get(id);
    if (!e?.snap.online || this.polling.has(id)) return;
    this.polling.add(id);
    this.read(id, 'scheduled')
      .catch(() => undefined)
      .finally(() => this.polling.delete(id));
  }

  has(id: string): boolean {
    return this.byDevice.has(id);
  }
  snapshots(): DeviceSnapshot[] {
    return [...this.byDevice.values()].map((e) => e.snap);
  }
  worker(port: string): PortWorker | undefined {
    return this.workers.get(port);
  }

  async read(id: string, priority: Priority): Promise<ReadResult> {
    const e = this.entry(id);
    const t0 = performance.now();
    try {
      const points = await e.worker.run(priority, (io) => (e.dev.driver === 'modbus-rtu' ? readModbus(io, e.dev) : readLine(io, e.dev)));
      this.update(e, { points, updatedAt: Date.now(), error: null, online: true });
      return { result: points, ms: Math.round(performance.now() - t0) };
    } catch (err) {
      this.update(e, { error: (err as Error).message });
      throw err;
    }
  }

  async act(id: string, action: string, value: PointValue | undefined, priority: Priority): Promise<ActionResult> {
    const e = this.entry(id);
    const dev = e.dev;
    const t0 = performance.now();
    const counted = `${id} ${action}`;
    this.actionCounts.set(counted, (this.actionCounts.get(counted) ?? 0) + 1);
    if (dev.driver === 'modbus-rtu') {
      const a = dev.actions.find((x) => x.name === action)!;
      const written = await e.worker.run(priority, (io) => writeModbus(io, dev, a.write, value ?? a.fixed ?? 0));
      this.update(e, { points: { ...e.snap.points, [a.write]: written }, updatedAt: Date.now(), error: null, online: true });
      return { result: { [a.write]: written }, ms: Math.round(performance.now() - t0) };
    }
    const a = dev.actions.find((x) => x.name === action)!;
    const reply = await e.worker.run(priority, (io) => sendLine(io, dev, a, typeof value === 'number' ? value : undefined));
    // A line command's reply is not its points: read them back so every panel shows the new state.
    this.poll(id);
    return { result: { reply }, ms: Math.round(performance.now() - t0) };
  }

  private entry(id: string) {
    const e = this.byDevice.get(id);
    if (!e) throw new EwsError('NOT_FOUND', `device ${id} is not attached to this board`);
    return e;
  }

  private update(e: { snap: DeviceSnapshot }, change: Partial<DeviceSnapshot>): void {
    e.snap = { ...e.snap, ...change };
    this.emit('snapshot', e.snap);
  }
}
