// Runs a device action at most once per Idempotency-Key across the cluster: records it pending,
// coalesces a concurrent retry onto the running attempt, records the answer, and tells every
// board (IDEM packets) so a retry through another board or a new master replays it.
import { EwsError } from '../shared/errors.ts';
import type { IdempotencyStore, IdemRecord } from '../shared/idempotency-store.ts';

export interface Captured { status: number; body: string; headers?: Record<string, string> }
export interface IdemOutcome extends Captured { replayed: boolean; board: number }

/** Answers that mean the device was (or may have been) driven: those are final for the key. */
const recordable = (status: number) => (status >= 200 && status < 300) || status === 502 || status === 504;

export class IdempotentExecutor {
  private readonly inflight = new Map<string, Promise<Captured>>();

  constructor(
    readonly store: IdempotencyStore,
    private readonly self: number,
    private readonly now: () => number,
    private readonly broadcast: (rec: IdemRecord) => void,
  ) {}

  async run(key: string, hash: string, exec: () => Promise<Captured>): Promise<IdemOutcome> {
    const c = this.store.check(key, hash, this.now());
    if (c.kind === 'conflict') throw new EwsError('IDEMPOTENCY_CONFLICT');
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
    this.store.put(pending, this.now());
    this.broadcast(pending);
    const attempt = exec();
    this.inflight.set(key, attempt);
    try {
      const r = await attempt;
      if (recordable(r.status)) {
        const done: IdemRecord = { ...pending, state: 'done', status: r.status, body: r.body };
        this.store.put(done, this.now());
        this.broadcast(done);
      } else this.store.drop(key);
      return { ...r, replayed: false, board: this.self };
    } catch (e) {
      this.store.drop(key);
      throw e;
    } finally {
      this.inflight.delete(key);
    }
  }
}
