// Runs a device action or a CGI program at most once per Idempotency-Key across the cluster: records it pending,
// coalesces a concurrent retry onto the running attempt, records the answer, and tells every
// board (IDEM packets) so a retry through another board or a new master replays it. With an
// intent log (stateDir) the start is on disk before the device is touched: a board killed
// between the device and the outcome answers the key IDEMPOTENCY_UNKNOWN after its restart.
import { EwsError } from '../../shared/errors.ts';
import { type IdempotencyStore, type IdemRecord, requestHash, SCOPED_KEY_RE } from '../../shared/idempotency-store.ts';
import type { IntentLog } from './intent-log.ts';

export interface Captured {
  status: number;
  body: string;
  headers?: Record<string, string>;
}
export interface IdemOutcome extends Captured {
  replayed: boolean;
  board: number;
}

/** Answers that mean the device was (or may have been) driven: those are final for the key. */
const recordable = (status: number) => (status >= 200 && status < 300) || status === 502 || status === 504;

/** 503 for a new key when every record held is still live: nothing ran. */
export function storeFull(countMax: number, retryAfterS: number): EwsError {
  return new EwsError('IDEMPOTENCY_STORE_FULL', `${countMax} idempotency keys are live (limits.idempotencyKeysMax); this new key was not run`, { retryAfterS });
}

export class IdempotentExecutor {
  private readonly inflight = new Map<string, Promise<Captured>>();

  constructor(
    readonly store: IdempotencyStore,
    private readonly self: number,
    private readonly now: () => number,
    private readonly broadcast: (rec: IdemRecord) => void,
    private readonly log?: IntentLog,
  ) {
    // What an earlier run of this board left: outcomes to replay, and starts with no outcome.
    for (const e of log?.entries() ?? []) {
      // At the time it was logged: the TTL runs across the restart, and no record outlives it.
      this.store.put({ key: e.key, hash: e.hash, state: e.state === 'done' ? 'done' : 'unknown', board: self, status: e.state === 'done' ? e.status : 409, body: e.body, atMs: 0 }, e.atMs);
    }
  }

  /** Once the board is on the network: tell every board which keys are unknown after our restart. */
  announceRecovered(): void {
    for (const e of this.log?.entries() ?? []) {
      if (e.state === 'started') this.broadcast({ key: e.key, hash: e.hash, state: 'unknown', board: this.self, status: 409, body: undefined, atMs: 0 });
    }
  }

  /** A keyed request as the master sent it (its key already scoped to the sender): checked, hashed, run at most once. */
  request(key: string | string[], method: string, path: string, body: Buffer, exec: () => Promise<Captured>): Promise<IdemOutcome> {
    if (typeof key !== 'string' || !SCOPED_KEY_RE.test(key)) throw new EwsError('BAD_REQUEST', 'Idempotency-Key must be 1-128 visible ASCII characters');
    return this.run(key, requestHash(method, path, body), exec);
  }

  async run(key: string, hash: string, exec: () => Promise<Captured>): Promise<IdemOutcome> {
    const c = this.store.check(key, hash, this.now());
    if (c.kind === 'conflict') throw new EwsError('IDEMPOTENCY_CONFLICT');
    if (c.kind === 'full') {
      this.store.refuse();
      throw storeFull(this.store.countMax, c.retryAfterS);
    }
    if (c.kind === 'unknown') throw new EwsError('IDEMPOTENCY_UNKNOWN');
    if (c.kind === 'done') {
      if (c.rec.body === undefined) throw new EwsError('IDEMPOTENCY_PENDING', 'the answer to this key is held by another board');
      return { status: c.rec.status, body: c.rec.body, replayed: true, board: c.rec.board };
    }
    if (c.kind === 'pending') {
      const running = c.board === this.self ? this.inflight.get(key) : undefined;
      if (!running) throw new EwsError('IDEMPOTENCY_PENDING');
      const r = await running;
      return { ...r, replayed: true, board: this.self };
    }
    const pending: IdemRecord = { key, hash, state: 'pending', board: this.self, status: 202, body: undefined, atMs: 0 };
    this.store.put(pending, this.now(), true);
    this.broadcast(pending);
    const log = this.log;
    // The start reaches the disk before the device is touched (a retry meanwhile waits on the attempt).
    const attempt = log
      ? log.started(key, hash).then(exec, (err: Error) => {
          throw new EwsError('INTERNAL', `cannot record the command before running it: ${err.message}`);
        })
      : exec();
    this.inflight.set(key, attempt);
    try {
      const r = await attempt;
      if (recordable(r.status)) {
        const done: IdemRecord = { ...pending, state: 'done', status: r.status, body: r.body };
        this.store.put(done, this.now());
        this.broadcast(done);
        log?.finished(key, hash, r.status, r.body);
      } else {
        this.store.drop(key);
        log?.forget(key);
      }
      return { ...r, replayed: false, board: this.self };
    } catch (e) {
      this.store.drop(key);
      log?.forget(key);
      throw e;
    } finally {
      this.inflight.delete(key);
    }
  }
}
