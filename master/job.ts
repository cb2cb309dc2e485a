// A request as the dispatch core sees it: the facts the adapter knows when it arrives, what the
// core records about it on its way, the effects the core returns, and how a request can end.

import { CONTENT_LEVELS } from '../shared/content-levels.ts';
import type { ErrorCode } from '../shared/errors.ts';
import type { QueueNode } from './linked-queue.ts';
import type { QueueItem } from './scheduler.ts';

/** What the adapter knows about a request when it arrives. */
export interface JobInfo {
  readonly cls: number;
  readonly bytes: number;
  /** Boards allowed to serve it (a device's attach list); undefined = any running board. */
  readonly candidates: readonly number[] | undefined;
  /** GET/HEAD/OPTIONS: may be retried on another board even after it was delivered. */
  readonly safe: boolean;
  /** A page (content adaptation applies); device control and APIs never adapt. */
  readonly page: boolean;
  /** The client's address (content adaptation picks a level by client hash). */
  readonly client: string;
  /** A verified session: admission control lets it through (paper 000's transactional rule). */
  readonly session: boolean;
  /** A run group (one CGI program): at most `groupMax` of its jobs run on a board at once; the rest wait. */
  readonly group: string | undefined;
  readonly groupMax: number;
}

export type JobState = 'reserved' | 'queued' | 'running' | 'done';

/** One request inside the core. `payload` is the adapter's (the HTTP exchange); the core never reads it. */
export interface Job<P> extends QueueItem, JobInfo {
  readonly payload: P;
  state: JobState;
  attempts: number;
  /** Boards that failed it already (never tried again); empty for almost every job. */
  tried: readonly number[];
  board: number;
  id: number;
  level: number;
  dispatchedMs: number;
  reservedAt: number;
  /** Its place among the jobs running on boards (the core's own, while it runs). */
  runEntry: QueueNode<Job<P>> | undefined;
}

export type Effect<P> =
  | { readonly kind: 'dispatch'; readonly job: Job<P>; readonly board: number; readonly id: number; readonly level: number }
  | { readonly kind: 'refuse'; readonly job: Job<P>; readonly code: ErrorCode; readonly message: string | undefined; readonly retryAfterS: number };

export const OUTCOMES = ['served', 'shed', 'expired', 'refused', 'failed', 'gone', 'timeout'] as const;
export type OutcomeName = (typeof OUTCOMES)[number];

const NONE: readonly number[] = [];

/** A new job, queued at `nowMs`. One shape for every job (no spread): the hot path stays monomorphic. */
export function newJob<P>(payload: P, info: JobInfo, nowMs: number): Job<P> {
  return {
    cls: info.cls,
    bytes: info.bytes,
    candidates: info.candidates,
    safe: info.safe,
    page: info.page,
    client: info.client,
    session: info.session,
    group: info.group,
    groupMax: info.groupMax,
    payload,
    enqueuedMs: nowMs,
    state: 'queued',
    attempts: 0,
    tried: NONE,
    board: -1,
    id: 0,
    level: CONTENT_LEVELS,
    dispatchedMs: 0,
    reservedAt: 0,
    queueEntry: undefined,
    runEntry: undefined,
  };
}
