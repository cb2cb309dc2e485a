// The devices attached to this board: a serial line and a worker per port, a driver per device,
// the last readings. Reads and actions go through the port's queue.
import { EventEmitter } from 'node:events';
import type { DeviceConfig } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import { readLine, sendLine } from './line-driver.ts';
import { type PointValue, readModbus, relayModbus, writeModbus } from './modbus-driver.ts';
import { openTcpPort, tcpPath } from './modbus-tcp.ts';
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

type Entry = { dev: DeviceConfig; worker: PortWorker; snap: DeviceSnapshot; off: () => void };

export class DeviceManager extends EventEmitter<DeviceManagerEvents> {
  private readonly workers = new Map<string, PortWorker>();
  private readonly byDevice = new Map<string, Entry>();
  /** "device action" -> times the device was actually driven (written to). */
  readonly actionCounts = new Map<string, number>();
  private readonly polls = new Map<string, NodeJS.Timeout>();
  private readonly polling = new Set<string>();
  private started = false;

  constructor(
    devices: readonly DeviceConfig[],
    private readonly board: number,
    private readonly factory: PortFactory,
    private readonly log: Logger,
    private readonly opts: { queueMax: number; backoffMaxMs: number },
  ) {
    super();
    for (const dev of devices) this.add(dev);
  }

  private add(dev: DeviceConfig): void {
    const at = dev.attach.find((a) => a.board === this.board);
    if (!at) return;
    // A Modbus TCP device has a connection of its own (tcp://host:port), reconnected as a port is reopened.
    const tcp = dev.driver === 'modbus-tcp' ? dev.tcp : undefined;
    const key = tcp ? `${tcpPath(tcp.host, tcp.port)}#${dev.id}` : at.port;
    let worker = this.workers.get(key);
    if (!worker) {
      const factory: PortFactory = tcp ? (path) => openTcpPort(path, Math.max(1000, dev.timeoutMs)) : this.factory;
      const line = new SerialLine(tcp ? tcpPath(tcp.host, tcp.port) : at.port, dev.serial, factory, this.log, 50, this.opts.backoffMaxMs);
      worker = new PortWorker(line, this.opts.queueMax);
      this.workers.set(key, worker);
      if (this.started) line.start();
    }
    const online = () => this.update(entry, { online: true, error: null });
    const offline = (reason: string) => this.update(entry, { online: false, error: `serial port ${reason}` });
    const line = worker.line;
    const entry: Entry = { dev, worker, snap: { id: dev.id, online: line.online, points: {}, updatedAt: null, error: null }, off: () => line.off('online', online).off('offline', offline) };
    this.byDevice.set(dev.id, entry);
    line.on('online', online);
    line.on('offline', offline);
    if (this.started) this.startPolling(entry);
  }

  private remove(e: Entry): void {
    e.off();
    clearInterval(this.polls.get(e.dev.id));
    this.polls.delete(e.dev.id);
    this.byDevice.delete(e.dev.id);
    // A port no device uses any more is closed (work queued on it still finishes or fails).
    if (![...this.byDevice.values()].some((x) => x.worker === e.worker)) {
      e.worker.line.stop();
      for (const [port, w] of this.workers) if (w === e.worker) this.workers.delete(port);
    }
  }

  /**
   * A pushed config's devices, live: a device that is new here or changed is (re)made, one gone
   * is stopped; the others go on untouched (their readings, their port's queue).
   */
  reconfigure(devices: readonly DeviceConfig[]): { added: string[]; removed: string[] } {
    const next = new Map(devices.filter((d) => d.attach.some((a) => a.board === this.board)).map((d) => [d.id, d]));
    const removed: string[] = [];
    for (const e of [...this.byDevice.values()]) {
      const d = next.get(e.dev.id);
      if (d && JSON.stringify(d) === JSON.stringify(e.dev)) next.delete(e.dev.id);
      else {
        this.remove(e);
        if (!d) removed.push(e.dev.id);
      }
    }
    for (const d of next.values()) this.add(d);
    return { added: [...next.keys()], removed };
  }

  start(): void {
    this.started = true;
    for (const w of this.workers.values()) w.line.start();
    for (const e of this.byDevice.values()) this.startPolling(e);
  }

  /** Each device is read every pollMs while online, behind control commands (scheduled priority), at most one poll in flight per device. */
  private startPolling(e: Entry): void {
    if (e.dev.pollMs <= 0 || this.polls.has(e.dev.id)) return;
    const t = setInterval(() => this.poll(e.dev.id), e.dev.pollMs);
    t.unref();
    this.polls.set(e.dev.id, t);
  }

  stop(): void {
    this.started = false;
    for (const t of this.polls.values()) clearInterval(t);
    this.polls.clear();
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
      const points = await e.worker.run(priority, (io) => (e.dev.driver === 'line' ? readLine(io, e.dev) : readModbus(io, e.dev)));
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
    if (dev.driver !== 'line') {
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

  /** A client's PDU relayed to a Modbus device as it is (the gateway); a write is counted and read back. */
  async relay(id: string, pdu: Buffer, write: boolean, priority: Priority): Promise<Buffer> {
    const e = this.entry(id);
    const dev = e.dev;
    if (dev.driver === 'line') throw new EwsError('BAD_REQUEST', `device ${id} does not speak Modbus`);
    if (write) this.actionCounts.set(`${id} modbus`, (this.actionCounts.get(`${id} modbus`) ?? 0) + 1);
    const reply = await e.worker.run(priority, (io) => relayModbus(io, dev, pdu, write));
    if (write) this.poll(id);
    return reply;
  }

  private entry(id: string): Entry {
    const e = this.byDevice.get(id);
    if (!e) throw new EwsError('NOT_FOUND', `device ${id} is not attached to this board`);
    return e;
  }

  private update(e: { snap: DeviceSnapshot }, change: Partial<DeviceSnapshot>): void {
    e.snap = { ...e.snap, ...change };
    this.emit('snapshot', e.snap);
  }
}
