// Every route of a board's HTTP port, in one table: method, path, who may call it, who answers,
// and the handler. The auth guard reads who may call, the router what a board answers itself,
// the lean intake what it may take, the master's intake what is a page and what goes to a
// device's board, and docs/http-api.md is checked against it. Pure.

import { nonCanonical } from './request-target.ts';

/** Each role may do what the ones before it may: viewers read, operators control devices, admins run the cluster (restore, config, drain, handover, upgrade). */
export type Role = 'viewer' | 'operator' | 'admin';
export const ROLES: readonly Role[] = ['viewer', 'operator', 'admin'];
/** Whether `role` may do what `need` may. */
export const roleAtLeast = (role: Role, need: Role): boolean => ROLES.indexOf(role) >= ROLES.indexOf(need);

/** Who may call: no login, or at least this role. */
export type Caller = 'public' | Role;

/**
 * Who answers: `board` any board itself, at once; `master` the master itself (another board
 * passes it on); `dispatched` queued at the master and run by the least-connected board;
 * `device` queued at the master and run by a board the device is attached to.
 */
export type Answerer = 'board' | 'master' | 'dispatched' | 'device';

export interface Route {
  readonly method: 'GET' | 'POST' | 'PUT';
  /** `{name}` is one path segment; a path ending `/*` matches everything under it. */
  readonly path: string;
  readonly caller: Caller;
  readonly answers: Answerer;
  readonly handler: string;
  /** Content adaptation applies (a page may be served from a lighter content level). */
  readonly adapts: boolean;
  readonly summary: string;
}

const r = <A extends Answerer, H extends string>(method: Route['method'], path: string, caller: Caller, answers: A, handler: H, summary: string, adapts = false) =>
  ({ method, path, caller, answers, handler, adapts, summary }) as const;

export const ROUTES = [
  r('GET', '/healthz', 'public', 'board', 'healthz', "this board's role, term and master"),
  r('GET', '/metrics', 'public', 'board', 'metrics', "this board's Prometheus metrics"),
  r('GET', '/api/session', 'public', 'board', 'session', 'who is logged in (and the CSRF token), or 401'),
  r('POST', '/api/login', 'public', 'board', 'login', 'log in with {name, password}: a session cookie, and a token for other boards'),
  r('POST', '/api/logout', 'public', 'board', 'logout', 'end the session on every board'),
  r('GET', '/api/cluster', 'viewer', 'board', 'cluster', 'the state table as this board sees it, with each board’s health'),
  r('GET', '/api/events', 'viewer', 'board', 'events', 'Server-Sent Events: cluster, device, alarms, log'),
  r('GET', '/api/history', 'viewer', 'board', 'history', 'a point’s samples (?device&point&since, format=csv)'),
  r('GET', '/api/alarms', 'viewer', 'board', 'alarms', 'alarm episodes, active first'),
  r('GET', '/api/log', 'viewer', 'board', 'log', 'the logbook: commands, acknowledgements, alarms, logins'),
  r('GET', '/api/sync', 'viewer', 'board', 'sync', 'what a rejoining board missed (?since)'),
  r('GET', '/api/backup', 'operator', 'board', 'backup', 'history, logbook, alarm episodes and the config, as one JSON file'),
  r('GET', '/api/config', 'admin', 'board', 'config', 'the config this board runs, secrets left out, with its configVersion and content hash'),
  r('PUT', '/api/config', 'admin', 'master', 'config-push', 'one config for every board: checked whole (400 naming every problem), then applied live, or by a rolling restart with the master last'),
  r('POST', '/api/cluster/config', 'public', 'board', 'config-apply', 'boards only: the config the master sends, signed with the cluster key (X-Ews-Config-Mac)'),
  r(
    'POST',
    '/api/upgrade',
    'admin',
    'master',
    'upgrade',
    'a rolling upgrade to the signed release bundle in the body: each node in turn, the master last by handover; stops at a board that does not come back healthy',
  ),
  r('POST', '/api/upgrade/rollback', 'admin', 'master', 'rollback', 'every board back to its previous release, the same way: one at a time, the master last'),
  r('POST', '/api/cluster/rollback', 'public', 'board', 'rollback-apply', 'boards only: back to the previous release, asked by the master (a fresh request signed with the cluster key)'),
  r('POST', '/api/cluster/upgrade', 'public', 'board', 'upgrade-apply', 'boards only: a release bundle the master sends, signed with the cluster key (X-Ews-Bundle-Mac)'),
  r('POST', '/api/restore', 'admin', 'board', 'restore', 'merge a backup into every running board'),
  r('POST', '/api/alarms/{id}/ack', 'operator', 'board', 'alarm-ack', 'acknowledge an active alarm'),
  r(
    'POST',
    '/api/boards/{board}/drain',
    'admin',
    'master',
    'drain',
    'take a board out of service: no new work, its work finishes, its devices go on through their other boards (or answer 503 MAINTENANCE)',
  ),
  r('POST', '/api/boards/{board}/undrain', 'admin', 'master', 'drain', 'put a drained board back into service'),
  r('POST', '/api/cluster/handover', 'admin', 'master', 'handover', 'hand the master role to ?to=ID (default: the next running, undrained board) at once: it claims the VIP, this master follows it'),
  r('GET', '/api/stats', 'viewer', 'master', 'stats', 'the master’s queue per class and its QoS controllers'),
  r('GET', '/api/devices', 'viewer', 'dispatched', 'devices', 'every device with its points, units, actions and boards'),
  r('GET', '/cgi-bin/devices/{device}', 'viewer', 'device', 'device-read', 'read every point of a device now'),
  r('POST', '/cgi-bin/devices/{device}/{action}', 'operator', 'device', 'device-action', 'run an action ({value} when it takes one); Idempotency-Key runs it at most once'),
  r('GET', '/cgi-bin/echo', 'viewer', 'dispatched', 'echo', 'the built-in slow CGI: waits ?ms, answers ?bytes'),
  r('POST', '/cgi-bin/echo', 'operator', 'dispatched', 'echo', 'the same, with a body'),
  r('GET', '/cgi-bin/burn', 'viewer', 'dispatched', 'burn', 'CPU work for ?ms (benchmarkHandlers only)'),
  r('GET', '/echo', 'viewer', 'dispatched', 'echo', 'the slow CGI as a page (content adaptation scales its bytes)', true),
  r('GET', '/echo/*', 'viewer', 'dispatched', 'echo', 'the same under any path', true),
  r('GET', '/*', 'public', 'dispatched', 'page', 'the web UI’s files at the content level chosen for the client', true),
] as const satisfies readonly Route[];

export type Handler = (typeof ROUTES)[number]['handler'];
export type RouteOf<A extends Answerer> = Extract<(typeof ROUTES)[number], { answers: A }>;

/** Paths that are not pages: a GET under them that no route names is not served from the UI's files. */
const NOT_PAGES = ['/api/', '/cgi-bin/'];

/** A route's path made once into what matching needs: string compares per request, a split only for `{name}` patterns. */
type Matcher = { kind: 'exact'; path: string } | { kind: 'prefix'; base: string } | { kind: 'pages' } | { kind: 'params'; segs: readonly string[] };

function matcher(pattern: string): Matcher {
  if (pattern === '/*') return { kind: 'pages' };
  if (pattern.endsWith('/*')) return { kind: 'prefix', base: `${pattern.slice(0, -2)}/` };
  return pattern.includes('{') ? { kind: 'params', segs: pattern.split('/') } : { kind: 'exact', path: pattern };
}

const MATCHERS = ROUTES.map((route) => ({ route, method: route.method as string, m: matcher(route.path) }));

function matches(m: Matcher, path: string, segs: () => string[]): boolean {
  switch (m.kind) {
    case 'exact':
      return path === m.path;
    case 'prefix':
      return path.startsWith(m.base);
    case 'pages':
      return path.startsWith('/') && !NOT_PAGES.some((p) => path.startsWith(p));
    case 'params': {
      const b = segs();
      return b.length === m.segs.length && m.segs.every((seg, i) => (seg.startsWith('{') ? b[i] !== '' : seg === b[i]));
    }
  }
}

/** The last answer of matchRoute: a request asks for its own route several times (guard, router, page test). */
let last: { method: string; path: string; route: (typeof ROUTES)[number] | undefined } = { method: '', path: '', route: undefined };

/** The route a request takes (HEAD as GET; exact paths before patterns, the table's order), or undefined. */
export function matchRoute(method: string, path: string): (typeof ROUTES)[number] | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  if (m === last.method && path === last.path) return last.route;
  let split: string[] | undefined;
  const segs = () => (split ??= path.split('/'));
  const route = MATCHERS.find((x) => x.method === m && matches(x.m, path, segs))?.route;
  last = { method: m, path, route };
  return route;
}

/**
 * Who may call a request. A path no route names needs a viewer to read and an operator to
 * change anything (it is queued and answered 404 by the board that runs it); the UI's files are public.
 */
export function callerFor(method: string, path: string): Caller {
  const route = matchRoute(method, path);
  if (route) return route.caller;
  return method === 'GET' || method === 'HEAD' ? 'viewer' : 'operator';
}

/** Whether a board answers the request itself (never queued): `board` routes, and `master` ones on the master. */
export function answeredHere(method: string, path: string, isMaster: boolean): (typeof ROUTES)[number] | undefined {
  const route = matchRoute(method, path);
  if (!route) return undefined;
  return route.answers === 'board' || (route.answers === 'master' && isMaster) ? route : undefined;
}

/** CGI local redirects followed for one client request, at most. */
export const REDIRECT_HOPS_MAX = 3;

/**
 * How a CGI program's local redirect (RFC 3875 §6.2.2) to `target` is served for the user who made
 * the first request (role `role`, undefined: no login), `hops` redirects in: inside the cluster
 * when it is a canonical GET the master queues (never one it answers itself) that the user may
 * call; `loop` past REDIRECT_HOPS_MAX; otherwise `client`: a 302, asked again through the guard.
 */
export function redirectWay(target: string, role: string | undefined, hops: number): 'cluster' | 'client' | 'loop' {
  if (hops >= REDIRECT_HOPS_MAX) return 'loop';
  if (nonCanonical(target) !== undefined) return 'client';
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  if (answeredHere('GET', path, true)) return 'client';
  const need = callerFor('GET', path);
  return need === 'public' || (role !== undefined && ROLES.includes(role as Role) && roleAtLeast(role as Role, need)) ? 'cluster' : 'client';
}
