// Where the bench's processes run. In a site the clients are other machines; on this 2-core
// machine wrk shares the CPUs with the boards it loads, and its threads, woken by every answer,
// land beside a board's and slow it (bench/results/README.md, "The slow mode, looked at again").
// So the board-like setups put every board (and HAProxy, and its plain servers) on CPU 0 and the
// load generator on CPU 1; both systems alike. BENCH_PLACEMENT=free turns it off. The
// unconstrained comparisons stay free: their boards need both cores.
import { availableParallelism } from 'node:os';

const PLACED = process.env.BENCH_PLACEMENT !== 'free' && availableParallelism() >= 2;

export type Command = readonly [string, string[]];

/** `cmd args` on `cpu` when the bench places and the setup is board-like, else as it is. */
const on = (cpu: number, cmd: string, args: string[], boardLike: boolean): Command => (PLACED && boardLike ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);

/** A board-side process (a board, HAProxy, a plain server). */
export const boardSide = (cmd: string, args: string[], boardLike: boolean): Command => on(0, cmd, args, boardLike);

/** The load generator. */
export const loadSide = (cmd: string, args: string[], boardLike: boolean): Command => on(1, cmd, args, boardLike);

/** Where a board-like setup's processes ran, for a results page (`haproxy`: the setup has HAProxy too). */
export const placementText = (haproxy: boolean): string =>
  PLACED ? `${haproxy ? 'every board (HAProxy and its plain servers too)' : 'the boards'} on CPU 0 and wrk on CPU 1 (bench/placement.ts)` : 'threads free on both CPUs';
