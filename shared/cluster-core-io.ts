// What the cluster core (shared/election.ts) takes and gives: its settings, the packets it sends
// and the events it tells its adapters of (etcd raft's Ready). Pure types.
import type { Message } from './protocol.ts';

export type Role = 'joining' | 'node' | 'master';

export interface CoreConfig {
  self: number;
  boards: number;
  heartbeatMs: number;
  tmaxMs: number;
  tthresholdMs: number;
  staggerMs: number;
  stateMinGapMs: number;
}

/** `to`: 'all' = broadcast (or fan-out), a number = unicast to that board. */
export interface Outgoing {
  to: 'all' | number;
  msg: Message;
}

export type CoreEvent =
  | { kind: 'role'; role: Role; term: number; master: number; previous: Role }
  | { kind: 'runstate'; board: number; runstate: 1 | 0 | -1 }
  /** The master heard a JOIN: the board booted (or lost us) and may have missed what was broadcast meanwhile. */
  | { kind: 'joined'; board: number }
  /** Another board claims mastership with an older term: adapters re-announce the VIP. */
  | { kind: 'stale-master'; board: number; term: number }
  /** The master drained or undrained a board (an admin's request). */
  | { kind: 'drained'; board: number; drained: boolean };

export interface Ready {
  send: Outgoing[];
  events: CoreEvent[];
}
