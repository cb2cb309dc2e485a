// Where the bench's processes run. In a site the clients are other machines; on this 2-core
// machine wrk shares the CPUs with the boards it loads, and its threads, woken by every answer,
// land beside a board's and slow it (bench/results/README.md, "The slow mode, looked at again":
// 14 of 49 settled 3-board runs in a slow mode with wrk free, 1 of 22 with wrk on a CPU of its
// own). So the board-like setups put every board (and HAProxy, and its plain servers) on CPU 0
// and the load generator on CPU 1; both systems alike. BENCH_PLACEMENT=free turns it off.
// The unconstrained comparisons stay free: their boards need both cores.
import { availableParallelism } from 'node:os';

export const PLACED = process.env.BENCH_PLACEMENT !== 'free' && availableParallelism() >= 2;

export type Command = readonly [string, string[]];

const on = (cpu: number, cmd: string, args: string[]): Command => (PLACED ? ['taskset', ['-c', String(cpu), cmd, ...args]] : [cmd, args]);

/** A board-side process (a board, HAProxy, a plain server) in a board-like setup. */
export const boardSide = (cmd: string, args: string[]): Command => on(0, cmd, args);

/** The load generator in a board-like setup. */
export const loadSide = (cmd: string, args: string[]): Command => on(1, cmd, args);
