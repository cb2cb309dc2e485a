// What the cluster address does on each of the cluster core's events, pure (the plane carries it
// out with node/cluster-plane/vip.ts).
import type { CoreEvent } from './cluster-core-io.ts';

export type VipStep = { do: 'claim'; afterMs: number } | { do: 'release' } | { do: 'announce' } | undefined;

/**
 * A board that became master claims the address at once, unless it became master as it booted
 * (the first board, before it heard anyone): then after Tmax, if it is still master. A running
 * cluster's master answers a booting board within a round trip, and the board steps down without
 * having moved the address; claimed at once, its gratuitous ARPs pointed the clients' ARP caches
 * at a board that let the address go 20 ms later (11 to 69 s of stalled connections on the
 * namespace LAN). A master that steps down releases it; a master that hears a stale master says
 * again that the address is here.
 */
export function vipStep(e: CoreEvent, tmaxMs: number): VipStep {
  if (e.kind === 'role' && e.role === 'master') return { do: 'claim', afterMs: e.previous === 'joining' ? tmaxMs : 0 };
  if (e.kind === 'role' && e.previous === 'master') return { do: 'release' };
  if (e.kind === 'stale-master') return { do: 'announce' };
  return undefined;
}
