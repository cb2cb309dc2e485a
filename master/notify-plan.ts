// Which alarm notifications are due, and the bounded queue that sends them with retries. Pure:
// time and what was already sent are arguments. The master decides; every send that succeeds
// becomes an audit entry (replicated to every board and kept on disk), so a new master knows what
// the old one sent and neither drops nor repeats a send. The one window in which a send can
// repeat: the master died after the target took it and before its entry reached another board.
import type { NotifyEvent } from '../shared/notify-config.ts';

export interface Episode {
  id: string;
  active: boolean;
  /** When the episode was raised; null: never. */
  since: number | null;
  clearedAt: number | null;
  acked: boolean;
}

export interface Target {
  /** `webhook-0`, `email`: the name in the audit log. */
  name: string;
  events: readonly NotifyEvent[];
}

export interface Delivery {
  /** One per episode, event (a repeat with its number) and target: what the audit log records as sent. */
  key: string;
  alarm: string;
  since: number;
  event: NotifyEvent;
  /** The repeat's number (1, 2, …); 0 for a raise or a clear. */
  n: number;
  target: string;
}

/** A cleared episode is still announced this long after it cleared (a master that was down meanwhile). */
export const CLEARED_WINDOW_MS = 3_600_000;

/** The audit entry that records a sent delivery: subject and text (parsed back by `sentKey`). */
export function sentEntry(d: Delivery): { subject: string; text: string } {
  return { subject: `${d.alarm}@${d.since}`, text: `${d.event}${d.n > 0 ? ` ${d.n}` : ''} → ${d.target}: sent` };
}

/** The delivery key an audit entry of kind `notify` records, or undefined. */
export function sentKey(subject: string | null, text: string): string | undefined {
  const m = /^(raised|cleared|repeat)(?: (\d+))? → (\S+): sent$/.exec(text);
  return subject && m ? `${subject}|${m[1]}${m[2] ?? ''}|${m[3]}` : undefined;
}

/**
 * What was sent, from the audit log's keys. Boards judge an episode's start independently (each
 * from the readings as it got them: some hundreds of ms apart), so a send counts for this board's
 * episode when the episode it was made for began within `slackMs` of it.
 */
export class SentBook {
  private readonly byTag = new Map<string, number[]>();
  constructor(
    keys: Iterable<string>,
    private readonly slackMs: number,
  ) {
    for (const k of keys) {
      const m = /^(.+)@(\d+)\|([a-z]+\d*)\|(\S+)$/.exec(k);
      if (!m) continue;
      const tag = `${m[1]}|${m[3]}|${m[4]}`;
      const list = this.byTag.get(tag) ?? [];
      list.push(Number(m[2]));
      this.byTag.set(tag, list);
    }
  }
  has(alarm: string, since: number, event: string, target: string): boolean {
    return (this.byTag.get(`${alarm}|${event}|${target}`) ?? []).some((t) => Math.abs(t - since) <= this.slackMs);
  }
}

const keyOf = (alarm: string, since: number, event: NotifyEvent, n: number, target: string) => `${alarm}@${since}|${event}${n > 0 ? n : ''}|${target}`;

/**
 * What is due now: for each episode and target, its raise; its clear (once the raise went out);
 * while it is raised and unacknowledged, its latest repeat (every `repeatMs`; missed ones are
 * not caught up). `sent`: what the audit log says was sent.
 */
export function dueDeliveries(episodes: readonly Episode[], targets: readonly Target[], sent: SentBook, repeatMs: number, nowMs: number): Delivery[] {
  const out: Delivery[] = [];
  for (const e of episodes) {
    if (e.since === null) continue;
    const cleared = !e.active && e.clearedAt !== null && e.clearedAt >= e.since;
    if (!e.active && !(cleared && nowMs - e.clearedAt! <= CLEARED_WINDOW_MS)) continue;
    for (const t of targets) {
      const add = (event: NotifyEvent, n: number) => {
        if (!sent.has(e.id, e.since!, `${event}${n > 0 ? n : ''}`, t.name) && t.events.includes(event))
          out.push({ key: keyOf(e.id, e.since!, event, n, t.name), alarm: e.id, since: e.since!, event, n, target: t.name });
      };
      add('raised', 0);
      if (cleared && (sent.has(e.id, e.since, 'raised', t.name) || !t.events.includes('raised'))) add('cleared', 0);
      if (e.active && !e.acked && repeatMs > 0) {
        const n = Math.floor((nowMs - e.since) / repeatMs);
        if (n >= 1) add('repeat', n);
      }
    }
  }
  return out;
}

interface Queued {
  d: Delivery;
  attempts: number;
  nextAt: number;
}

/** Retry waits: 1 s, doubling, at most a minute; given up after ATTEMPTS_MAX tries. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 60_000;
export const ATTEMPTS_MAX = 10;

/** Deliveries waiting for a send or a retry, bounded: when full, a repeat is dropped before a first raise or a clear. */
export class NotifyQueue {
  private items: Queued[] = [];
  private readonly busy = new Set<string>();
  /** Keys dropped or given up: not proposed again (bounded, oldest forgotten first). */
  private readonly passed = new Set<string>();
  /** Why deliveries were not kept: the queue was full, or every attempt failed. */
  readonly dropped = { full: 0, 'gave-up': 0 };

  constructor(private readonly max: number) {}

  get size(): number {
    return this.items.length;
  }

  /** Keys waiting or being sent. */
  has(key: string): boolean {
    return this.busy.has(key) || this.passed.has(key) || this.items.some((q) => q.d.key === key);
  }

  private pass(key: string): void {
    this.passed.add(key);
    if (this.passed.size > 4 * this.max) this.passed.delete(this.passed.values().next().value!);
  }

  /** False when it was dropped (full, and nothing less worth keeping to make room for it). */
  add(d: Delivery, nowMs: number): boolean {
    if (this.has(d.key)) return true;
    if (this.items.length >= this.max) {
      const repeat = d.event === 'repeat' ? -1 : this.items.findIndex((q) => q.d.event === 'repeat' && !this.busy.has(q.d.key));
      if (repeat < 0) {
        this.dropped.full++;
        this.pass(d.key);
        return false;
      }
      this.pass(this.items.splice(repeat, 1)[0]!.d.key);
      this.dropped.full++;
    }
    this.items.push({ d, attempts: 0, nextAt: nowMs });
    return true;
  }

  /** Up to `n` deliveries due now, oldest first, marked busy until `done` or `failed`. */
  take(nowMs: number, n: number): Delivery[] {
    const out: Delivery[] = [];
    for (const q of this.items) {
      if (out.length >= n) break;
      if (q.nextAt <= nowMs && !this.busy.has(q.d.key)) {
        this.busy.add(q.d.key);
        out.push(q.d);
      }
    }
    return out;
  }

  done(key: string): void {
    this.busy.delete(key);
    this.items = this.items.filter((q) => q.d.key !== key);
  }

  /** A failed attempt: retried after a backoff, or given up (true). */
  failed(key: string, nowMs: number): boolean {
    this.busy.delete(key);
    const q = this.items.find((x) => x.d.key === key);
    if (!q) return false;
    q.attempts++;
    if (q.attempts >= ATTEMPTS_MAX) {
      this.items = this.items.filter((x) => x !== q);
      this.dropped['gave-up']++;
      this.pass(key);
      return true;
    }
    q.nextAt = nowMs + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (q.attempts - 1));
    return false;
  }

  /** This board stepped down: the new master decides from the audit log. */
  clear(): void {
    this.items = this.items.filter((q) => this.busy.has(q.d.key));
  }
}
