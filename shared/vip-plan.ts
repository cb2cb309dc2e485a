// What the cluster address does on each of the cluster core's events, pure (the plane carries it
// out with node/cluster-plane/vip.ts).
import type { CoreEvent } from './cluster-core-io.ts';

export type VipStep = 'claim' | 'release' | 'announce' | undefined;

/**
 * A board that became master claims the address at once: it became master only after it heard no
 * master for Tmax (a booting board listens first too: shared/election.ts, start), or by a planned
 * handover. A master that steps down releases it; a master that hears a stale master says again
 * that the address is here.
 */
export function vipStep(e: CoreEvent): VipStep {
  if (e.kind === 'role' && e.role === 'master') return 'claim';
  if (e.kind === 'role' && e.previous === 'master') return 'release';
  if (e.kind === 'stale-master') return 'announce';
  return undefined;
}
