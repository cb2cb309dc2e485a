// One request at a time per serial port, control before scheduled reads, a bounded queue.
// A transaction registers for the answer before writing and starts its timeout after the write
// (zigbee-herdsman's "waitress"); after a timeout or garbage the port's buffered bytes are
// discarded so a late answer cannot be taken for the next one.
import { EwsError } from '../../shared/errors.ts';
import type { SerialLine } from './serial-line.ts';

export type Priority = 'control' | 'scheduled';
export type Accept<T> = (rx: Buffer) => { more: true } | { value: T } | { error: string };

export interface PortIO {
  transact<T>(request: Buffer, accept: Accept<T>, timeoutMs: number): Promise<T>;
}

interface Job {
  run: (io: PortIO) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** How long to let a late answer finish arriving before discarding it. */
const QUIET_MS = 20;

export class PortWorker implements PortIO {
  private readonly queues: Record<Priority, Job[]> = { control: [], scheduled: [] };
  private busy = false;
  transactions = 0;
  /** Times the port was lent to a program. */
  lends = 0;

  constructor(
    readonly line: SerialLine,
    private readonly queueMax: number,
  ) {}

  get queued(): number {
    return this.queues.control.length + this.queues.scheduled.length;
  }

  run<T>(priority: Priority, job: (io: PortIO) => Promise<T>): Promise<T> {
    if (!this.line.online && !this.line.lent) return Promise.reject(new EwsError('DEVICE_OFFLINE', `serial port ${this.line.path} is offline`, { retryAfterS: 2 }));
    if (this.queued >= this.queueMax) return Promise.reject(new EwsError('DEVICE_BUSY', `${this.queued} requests already wait for ${this.line.path}`, { retryAfterS: 1 }));
    return new Promise<T>((resolve, reject) => {
      this.queues[priority].push({ run: job, resolve: resolve as (v: unknown) => void, reject });
      this.next();
    });
  }

  /**
   * Lend the port to `use` (a CGI program with cgi.programs.NAME.port) as one job of the queue: the
   * exchange under way finishes, the port is closed, `use` runs, the port is opened again before
   * the next job. No byte of ours interleaves with the borrower's.
   */
  lend<T>(priority: Priority, use: () => Promise<T>): Promise<T> {
    if (this.queued >= this.queueMax) return Promise.reject(new EwsError('DEVICE_BUSY', `${this.queued} requests already wait for ${this.line.path}`, { retryAfterS: 1 }));
    return new Promise<T>((resolve, reject) => {
      const run = async (): Promise<T> => {
        await this.line.release();
        this.lends++;
        try {
          return await use();
        } finally {
          await this.line.reclaim();
        }
      };
      this.queues[priority].push({ run, resolve: resolve as (v: unknown) => void, reject });
      this.next();
    });
  }

  private next(): void {
    if (this.busy) return;
    const job = this.queues.control.shift() ?? this.queues.scheduled.shift();
    if (!job) return;
    this.busy = true;
    job
      .run(this)
      .then(job.resolve, job.reject)
      .finally(() => {
        this.busy = false;
        this.next();
      });
  }

  transact<T>(request: Buffer, accept: Accept<T>, timeoutMs: number): Promise<T> {
    const line = this.line;
    this.transactions++;
    return new Promise<T>((resolve, reject) => {
      let rx: Buffer = Buffer.alloc(0);
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const finish = (err: unknown, value?: T, dirty = false): void => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        line.off('data', onData);
        line.off('offline', onOffline);
        const done = () => (err ? reject(err) : resolve(value as T));
        if (dirty) setTimeout(() => void line.discard().then(done, done), QUIET_MS);
        else done();
      };
      const onData = (d: Buffer): void => {
        rx = rx.length === 0 ? d : Buffer.concat([rx, d]);
        const r = accept(rx);
        if ('value' in r) finish(undefined, r.value);
        else if ('error' in r) finish(new EwsError('DEVICE_ERROR', r.error), undefined, true);
        else if (rx.length > 4096) finish(new EwsError('DEVICE_ERROR', 'answer too long'), undefined, true);
      };
      const onOffline = (reason: string): void => finish(new EwsError('DEVICE_OFFLINE', `serial port ${line.path} lost (${reason})`, { retryAfterS: 2 }));
      line.on('data', onData);
      line.on('offline', onOffline);
      line.write(request).then(
        () => {
          if (settled) return;
          timer = setTimeout(
            () => finish(new EwsError('DEVICE_TIMEOUT', `no answer within ${timeoutMs} ms${rx.length ? ` (${rx.length} bytes of a partial answer)` : ''}`), undefined, true),
            timeoutMs,
          );
        },
        (err: unknown) => finish(err),
      );
    });
  }
}

/** Retry a device exchange on timeouts and garbage (not on offline ports or device refusals). */
export async function withRetries<T>(retries: number, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const retryable = e instanceof EwsError && (e.code === 'DEVICE_TIMEOUT' || (e.code === 'DEVICE_ERROR' && !/^device refused/.test(e.message)));
      if (!retryable || attempt >= retries) throw e;
    }
  }
}
