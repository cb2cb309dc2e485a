// One serial port, kept open: opens it, notices when it goes away (USB unplug, pty closed) and
// reopens it with bounded exponential backoff. Data and state changes come out as events.
import { EventEmitter } from 'node:events';
import type { SerialSettings } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';

/** The part of serialport's SerialPort we use (SerialPortMock has it too). */
export interface PortLike {
  open(cb: (err: Error | null) => void): void;
  write(data: Buffer, cb: (err: Error | null | undefined) => void): boolean;
  drain(cb: (err: Error | null) => void): void;
  flush(cb: (err: Error | null) => void): void;
  close(cb?: (err: Error | null) => void): void;
  readonly isOpen: boolean;
  on(event: 'data', cb: (d: Buffer) => void): this;
  on(event: 'close', cb: (err?: Error & { disconnected?: boolean }) => void): this;
  on(event: 'error', cb: (err: Error) => void): this;
  removeAllListeners(): this;
}
export type PortFactory = (path: string, settings: SerialSettings) => PortLike | Promise<PortLike>;

/** serialport (~8 MB of RSS with its native binding) loads only when a board opens a real port. */
export const openRealPort: PortFactory = async (path, s) => {
  const { SerialPort } = await import('serialport');
  return new SerialPort({ path, baudRate: s.baudRate, parity: s.parity, dataBits: s.dataBits, stopBits: s.stopBits, autoOpen: false }) as unknown as PortLike;
};

export interface SerialLineEvents {
  online: [];
  offline: [reason: string];
  data: [chunk: Buffer];
  /** The port is open (after `online`, or back from a loan). */
  opened: [];
  /** An attempt to open failed (a retry follows). */
  openFailed: [reason: string];
}

export class SerialLine extends EventEmitter<SerialLineEvents> {
  private port: PortLike | undefined;
  private retry: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private stopped = false;
  /** Lent to a CGI program (cgi.programs.NAME.port), from `release` until `reclaim` has reopened it (or failed to). */
  lent = false;
  /** Closed for the borrower: nothing reopens it. */
  private held = false;
  /** Released while online: nobody was told, so a failure to reopen must still say it went offline. */
  private quiet = false;
  online = false;
  opens = 0;

  constructor(
    readonly path: string,
    private readonly settings: SerialSettings,
    private readonly factory: PortFactory,
    private readonly log: Logger,
    private readonly backoffMinMs = 50,
    private readonly backoffMaxMs = 5000,
  ) {
    super();
    this.backoffMs = backoffMinMs;
  }

  start(): void {
    this.stopped = false;
    this.tryOpen();
  }

  stop(): void {
    this.stopped = true;
    // A reclaim under way ends here: the port stays closed.
    if (this.lent) this.emit('openFailed', 'stopped');
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    const p = this.port;
    this.port = undefined;
    if (p) {
      p.removeAllListeners();
      p.on('error', () => {});
      if (p.isOpen) p.close();
    }
    this.setOffline('stopped');
  }

  /**
   * Close the port and keep it closed for someone else (a CGI program) until `reclaim`. Nobody is
   * told it went offline: it is in use, not lost, and work for it waits in its worker's queue.
   */
  release(): Promise<void> {
    this.lent = true;
    this.held = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    this.quiet = this.online;
    this.online = false;
    const p = this.port;
    this.port = undefined;
    if (!p) return Promise.resolve();
    p.removeAllListeners();
    p.on('error', () => {});
    if (!p.isOpen) return Promise.resolve();
    return new Promise((resolve) => p.close(() => resolve()));
  }

  /** Open the port again after `release`; resolves once it is open, or failed to open (it then retries as always). */
  reclaim(): Promise<void> {
    this.held = false;
    if (this.stopped) {
      this.lent = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        this.off('opened', done);
        this.off('openFailed', done);
        this.lent = false;
        resolve();
      };
      this.on('opened', done);
      this.on('openFailed', done);
      this.backoffMs = this.backoffMinMs;
      this.tryOpen();
    });
  }

  write(data: Buffer): Promise<void> {
    const p = this.port;
    if (!p || !this.online) return Promise.reject(new EwsError('DEVICE_OFFLINE', `serial port ${this.path} is not open`, { retryAfterS: 2 }));
    return new Promise((resolve, reject) => {
      p.write(data, (err) => {
        if (err) return reject(new EwsError('DEVICE_OFFLINE', `write to ${this.path} failed: ${err.message}`, { retryAfterS: 2 }));
        p.drain((e) => (e ? reject(new EwsError('DEVICE_OFFLINE', `write to ${this.path} failed: ${e.message}`, { retryAfterS: 2 })) : resolve()));
      });
    });
  }

  /** Throw away whatever the device sent that nobody asked for. */
  discard(): Promise<void> {
    const p = this.port;
    if (!p || !this.online) return Promise.resolve();
    return new Promise((resolve) => p.flush(() => resolve()));
  }

  private tryOpen(): void {
    if (this.stopped || this.held) return;
    this.retry = undefined;
    let made: PortLike | Promise<PortLike>;
    try {
      made = this.factory(this.path, this.settings);
    } catch (e) {
      this.scheduleReopen(`cannot create port: ${(e as Error).message}`);
      return;
    }
    Promise.resolve(made).then(
      (p) => this.adopt(p),
      (e: unknown) => this.scheduleReopen(`cannot create port: ${(e as Error).message}`),
    );
  }

  private adopt(p: PortLike): void {
    if (this.stopped || this.held) return;
    this.port = p;
    p.on('error', (err) => this.log.debug({ path: this.path, err: err.message }, 'serial error'));
    p.open((err) => {
      if (this.stopped || this.port !== p) {
        // Stopped or lent while it was opening: it must not stay open behind our back.
        if (!err && p.isOpen) p.close();
        return;
      }
      if (err) return this.scheduleReopen(err.message);
      this.opens++;
      this.backoffMs = this.backoffMinMs;
      this.online = true;
      // Back from a loan as it was lent: nothing changed for anyone listening.
      const back = this.quiet;
      this.quiet = false;
      if (!back) {
        this.log.info({ path: this.path }, 'serial port open');
        this.emit('online');
      }
      this.emit('opened');
    });
    p.on('data', (d) => this.emit('data', d));
    p.on('close', (err) => {
      if (this.port !== p) return;
      this.port = undefined;
      p.removeAllListeners();
      p.on('error', () => {});
      this.scheduleReopen(err?.disconnected ? 'disconnected' : 'closed');
    });
  }

  private scheduleReopen(reason: string): void {
    this.setOffline(reason);
    this.emit('openFailed', reason);
    if (this.stopped || this.retry) return;
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMaxMs, this.backoffMs * 2);
    this.retry = setTimeout(() => this.tryOpen(), wait);
    this.retry.unref();
  }

  private setOffline(reason: string): void {
    if (!this.online && !this.quiet) return;
    this.online = false;
    this.quiet = false;
    this.log.warn({ path: this.path, reason }, 'serial port lost');
    this.emit('offline', reason);
  }
}
