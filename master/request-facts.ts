// What the master knows of a request before it queues it, decided from the request's own facts:
// whether it is a page (content adaptation applies), who the client is (X-Forwarded-For counts
// only from a cluster board, the hop that sets it), and which internal origin it comes from (a
// schedule or the MQTT bridge, believed only from this machine or a board). Pure.
import type { Origin } from '../shared/dispatch-frame.ts';
import { matchRoute } from '../shared/routes.ts';

const INTERNAL_ORIGINS: Readonly<Record<string, Origin>> = { schedule: 'schedule', mqtt: 'mqtt' };

/** A socket's address without the IPv4-mapped prefix. */
export const plainAddress = (a: string | undefined): string => {
  const s = a ?? '?';
  return s.startsWith('::ffff:') ? s.slice(7) : s;
};

/** A page: its answer may come from a lighter content level. */
export const isPage = (method: string, path: string): boolean => matchRoute(method, path)?.adapts ?? false;

/** The client's address: the first X-Forwarded-For entry when the peer is a board, else the peer. */
export function clientAddress(peer: string, forwardedFor: string | string[] | undefined, boards: ReadonlySet<string>): string {
  if (!boards.has(peer)) return peer;
  const first = typeof forwardedFor === 'string' ? forwardedFor.split(',')[0]!.trim() : '';
  return first || peer;
}

/** Where a request comes from: x-ews-origin is believed only from a trusted peer (this machine, a board). */
export function requestOrigin(via: string | string[] | undefined, peer: string, trusted: ReadonlySet<string>): Origin {
  return typeof via === 'string' && trusted.has(peer) ? (INTERNAL_ORIGINS[via] ?? 'client') : 'client';
}
