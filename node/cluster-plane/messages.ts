// What the request thread and the cluster plane (a worker thread) say to each other. Times cross
// as wall-clock-based milliseconds (performance.timeOrigin + now): each thread has its own origin.
import type { Clock } from '../../shared/clock.ts';
import type { Config } from '../../shared/config.ts';
import type { CoreEvent, Role } from '../../shared/election.ts';
import type { AppMessage, RunState, StateBody } from '../../shared/protocol.ts';

/** The part of the config the plane needs (no regexes, nothing else to clone). */
export type PlaneConfig = Pick<Config, 'cluster' | 'boards' | 'limits'>;

export interface PlaneData {
  cfg: PlaneConfig;
  boardId: string;
  bootEpoch: number;
  /** A module (URL) exporting `planeTransport`: the demo's and the tests' cable; else the system's network. */
  transportModule: string | undefined;
  /** The request thread silent this long: a master steps down on purpose. */
  requestThreadDeadMs: number;
}

/** Request thread → plane. */
export type ToPlane =
  /** This board's executing count; `answered`: a node answered a dispatch of its master since the last (shared/report-cadence.ts). */
  | { t: 'load'; load: number; answered: boolean }
  | { t: 'own'; own: number[] }
  /** Loads heard on dispatch answers, each with when it was read (absolute ms). */
  | { t: 'observe'; loads: Array<[board: number, load: number, atAbs: number]> }
  | { t: 'app'; type: AppMessage['type']; body: Record<string, unknown> }
  | { t: 'alive' }
  /** Master: an admin drains (true) or undrains a board. */
  | { t: 'drain'; board: number; drained: boolean }
  /** Master: hand mastership to a board now (a planned handover). */
  | { t: 'handover'; board: number }
  /** A /metrics scrape: the plane answers with its counters as they are now. */
  | { t: 'metrics' }
  /** A stopping board: a node lets the cluster address go now (a master keeps it until it closes). */
  | { t: 'release' }
  | { t: 'close' };

export interface PlaneState {
  role: Role;
  term: number;
  master: number;
  view: StateBody | undefined;
  runstates: RunState[];
  reported: number[];
  /** Absolute ms (see the file comment). */
  heard: number[];
  epochs: number[];
  /** The highest protocol version each board has shown since its boot (0: not heard). */
  protocols: number[];
  /** Stepped down because the request thread stalled; it rejoins when the thread answers again. */
  resigned: boolean;
}

/** Plane → request thread. */
export type FromPlane =
  /** The plane's own thread, by its OS thread id (from the thread, before the plane starts). */
  | { t: 'thread'; tid: number }
  | { t: 'started'; state: PlaneState }
  | { t: 'state'; state: PlaneState; events: CoreEvent[] }
  | { t: 'app'; msg: AppMessage }
  | { t: 'metrics'; text: string }
  /** The cluster address is off this board, or it is the master (after a 'release'). */
  | { t: 'released' }
  | { t: 'closed' };

/**
 * How often the request thread proves to the plane that it runs: an eighth of
 * requestThreadDeadMs. Each proof wakes the plane's thread; twice a heartbeat, they were a third
 * of an idle plane's wake-ups at the default timings (bench/results/dispatch-path.md, wave 3).
 */
export const aliveEveryMs = (requestThreadDeadMs: number): number => Math.max(5, Math.floor(requestThreadDeadMs / 8));

/** Milliseconds on a clock both threads share. */
export const absClock: Clock = { now: () => performance.timeOrigin + performance.now() };

/** The plane's end of its channel to the request thread (a MessagePort on a board). */
export interface PlanePort {
  postMessage(m: FromPlane): void;
  on(event: 'message', fn: (m: ToPlane) => void): unknown;
  close(): void;
}
