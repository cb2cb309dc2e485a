// Every client request to this board: security headers and CORS, the board's own answers
// (health, metrics, sessions, the cluster view, SSE, the master's queue stats), then the request
// proper: queued by the master, or passed to the master once by any other board.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { redactConfig } from '../../shared/config-redact.ts';
import { EwsError } from '../../shared/errors.ts';
import { KEY_RE, scopedKey } from '../../shared/idempotency-store.ts';
import type { Registry } from '../../shared/metrics.ts';
import { nonCanonical } from '../../shared/request-target.ts';
import { answeredHere, callerFor, matchRoute, type RouteOf } from '../../shared/routes.ts';
import { securityHeaders } from '../../shared/security-headers.ts';
import { userLine } from '../../shared/user-line.ts';
import { type AuthGuard, clusterOrigins } from '../auth/guard.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { drainRoute, handoverRoute } from '../cluster/maintenance-routes.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import type { ConfigApply } from '../config/config-apply.ts';
import type { ConfigPush } from '../config/config-push.ts';
import type { RunningConfig } from '../config/running-config.ts';
import { backupRoutes } from '../operator/backup-routes.ts';
import { logCommandWhenAnswered, logProgramWhenAnswered } from '../operator/command-log.ts';
import { operatorApi } from '../operator/operator-api.ts';
import type { OperatorState } from '../operator/operator-state.ts';
import type { TlsMaterial } from '../tls-material.ts';
import type { UpgradeBoard } from '../upgrade/upgrade-board.ts';
import type { UpgradeRollout } from '../upgrade/upgrade-rollout.ts';
import type { EventsHub } from './events-hub.ts';
import { readBody, sendError, sendJson } from './http-io.ts';
import type { Intake } from './intake.ts';
import { type ClientAnswer, type ClientRequest, LeanResponse } from './lean-exchange.ts';
import type { MasterRelay } from './master-relay.ts';
import type { SessionRoutes } from './sessions.ts';

export interface RouterDeps {
  cfg: Config;
  self: BoardConfig;
  mirror: ClusterMirror;
  guard: AuthGuard;
  sessions: SessionRoutes;
  intake: Intake;
  relay: MasterRelay;
  hub: EventsHub;
  metrics: Registry;
  operator(): OperatorState;
  view(): ClusterView;
  /** A new SSE client: keep the cluster view flowing. */
  watched(): void;
  closing(): boolean;
  /** The config running now, and its file as JSON (GET /api/config, backups). */
  running: RunningConfig;
  /** PUT /api/config on the master, and a pushed config arriving here. */
  push: ConfigPush;
  apply: ConfigApply;
  /** POST /api/upgrade on the master, and a release arriving here. */
  upgrade: { rollout: UpgradeRollout; board: UpgradeBoard };
  tls: TlsMaterial | undefined;
}

/** The name in a Host header, lower-case, without the port; undefined when missing or malformed. */
function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^([A-Za-z0-9.-]{1,253})(?::\d{1,5})?$/.exec(header);
  return m ? m[1]!.toLowerCase() : undefined;
}

/** How often a request that waits for a master (mastership moving) looks again. */
const MASTER_POLL_MS = 5;

export class Router {
  private readonly securityHeaders: ReadonlyArray<[string, string]>;
  /** The same, as the lines the lean intake writes (made once). */
  private readonly securityLines: Buffer;
  private readonly hosts: ReadonlySet<string>;

  constructor(private readonly d: RouterDeps) {
    this.hosts = new Set(['localhost', '127.0.0.1', ...d.cfg.boards.map((b) => b.address), ...(d.cfg.cluster.vip ? [d.cfg.cluster.vip.address] : []), ...d.cfg.cluster.hosts]);
    // The page may call the other boards (failover), over the scheme the boards speak.
    const scheme = d.cfg.tls ? 'https://' : 'http://';
    const others = [...clusterOrigins(d.cfg)].filter((o) => o.startsWith(scheme)).join(' ');
    this.securityHeaders = securityHeaders(others, Boolean(d.cfg.tls));
    this.securityLines = Buffer.from(this.securityHeaders.map(([k, v]) => `${k}: ${v}\r\n`).join(''), 'latin1');
  }

  /** Whether the lean intake may take this request: the master's queued work, nothing the board answers itself. */
  leanAccepts(method: string, path: string): boolean {
    if (this.d.mirror.role !== 'master' || this.d.closing()) return false;
    const route = matchRoute(method, path);
    return route === undefined || route.answers === 'dispatched' || route.answers === 'device';
  }

  /** A request from the lean intake (`leanAccepts` took it), body read; `path` without the query. */
  lean(req: ClientRequest, res: ClientAnswer, body: Buffer, path: string): void {
    try {
      if (this.prelude(req, res)) return;
      if (!this.queue(req, res, path, body)) throw new EwsError('NO_MASTER');
    } catch (err) {
      sendError(res, err);
    }
  }

  /** The checks every request passes, and the headers every answer carries; true when answered (a preflight). */
  private prelude(req: ClientRequest, res: ClientAnswer): boolean {
    const { d } = this;
    if (d.closing() && !this.forTheCluster(req)) throw new EwsError('SHUTTING_DOWN');
    const url = req.url ?? '/';
    // One spelling of every path from here on: the guard decides on what will run.
    const odd = nonCanonical(url);
    if (odd) throw new EwsError('BAD_REQUEST', odd);
    // A page a browser loaded from another name (DNS rebinding) cannot talk to the cluster.
    const host = hostName(req.headers.host);
    if (host === undefined || !this.hosts.has(host)) throw new EwsError('BAD_REQUEST', "unknown Host: reach the cluster by a board's or the cluster's address or a name in cluster.hosts");
    if (res instanceof LeanResponse) res.presetLines(this.securityLines);
    else for (const [k, v] of this.securityHeaders) res.setHeader(k, v);
    // The UI fails over between boards: the cluster's own origins may call any board.
    const origin = req.headers.origin;
    if (origin && d.guard.allowedOrigin(origin)) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
      res.setHeader('vary', 'Origin');
      if (req.method === 'OPTIONS') {
        res.writeHead(204, {
          'access-control-allow-methods': 'GET, POST, PUT',
          'access-control-allow-headers': 'content-type, x-csrf-token, idempotency-key, authorization',
          'access-control-max-age': '600',
        });
        res.end();
        return true;
      }
    }
    return false;
  }

  /**
   * A stopping node still relays what reached it on the cluster address: the client asked the
   * cluster, and the address was this board's until its master handed over a moment ago.
   */
  private forTheCluster(req: ClientRequest): boolean {
    const vip = this.d.cfg.cluster.vip;
    return vip !== undefined && req.socket.localAddress === vip.address && this.d.mirror.role !== 'master';
  }

  /** The master queues the request; false when this board is not the master. */
  private queue(req: ClientRequest, res: ClientAnswer, path: string, body: Buffer): boolean {
    const { d } = this;
    if (d.mirror.role !== 'master') return false;
    const method = req.method ?? 'GET';
    const now = Date.now();
    // Checked before anything is queued; only a verified session passes admission control.
    const who = d.guard.check(req, callerFor(method, path), now);
    // An Idempotency-Key is checked here and from here on is the pair (who sent it, key). The
    // header itself is left as sent: a request this master passes on when it steps down is scoped
    // by the next master, once, to the same pair.
    const raw = req.headers['idempotency-key'];
    if (raw !== undefined && (typeof raw !== 'string' || !KEY_RE.test(raw))) throw new EwsError('BAD_REQUEST', 'Idempotency-Key must be 1-128 visible ASCII characters');
    const key = raw === undefined ? undefined : scopedKey(who?.user ?? 'anonymous', raw, who?.session?.svc === 1);
    if (method === 'POST') logCommandWhenAnswered(d.operator(), who?.user ?? null, path, body, res);
    logProgramWhenAnswered(d.operator(), who?.user ?? null, method, path, res);
    // Only a session that verifies skips admission (a public page's too); any other cookie is no session.
    const user = who && who.via !== 'open' ? userLine({ name: who.user, role: who.role, via: who.via }) : undefined;
    d.intake.handle(req, res, body, who ? who.session !== undefined : d.guard.verifiedSession(req, now), key, user);
    return true;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { d } = this;
    if (this.prelude(req, res)) return;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const now = Date.now();
    const mirror = d.mirror;
    // The route table (shared/routes.ts) says what a board answers itself; the compiler refuses a
    // handler the table names without a case here.
    const own = method === 'GET' || method === 'POST' || method === 'PUT' ? (answeredHere(method, path, mirror.role === 'master') as RouteOf<'board' | 'master'> | undefined) : undefined;
    if (own) {
      const who = own.caller === 'public' ? undefined : d.guard.check(req, own.caller, now);
      switch (own.handler) {
        case 'healthz':
          return sendJson(res, 200, {
            board: d.self.id,
            role: mirror.role === 'master' ? 'master' : 'node',
            state: mirror.role,
            term: mirror.term,
            master: mirror.master >= 0 ? d.cfg.boards[mirror.master]!.id : null,
          });
        case 'metrics': {
          await mirror.refreshMetrics();
          const text = d.metrics.render();
          res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4', 'content-length': Buffer.byteLength(text) });
          res.end(text);
          return;
        }
        case 'session':
          return d.sessions.session(req, res);
        case 'login':
          return d.sessions.login(req, res);
        case 'logout':
          return d.sessions.logout(req, res);
        case 'cluster':
          return sendJson(res, 200, d.view());
        case 'events': {
          // Without login everyone is "anonymous": the per-user bound then applies per client address.
          const owner = who?.session ? { user: who.user, sid: who.session.sid, expS: who.session.exp } : { user: `client ${req.socket.remoteAddress ?? '?'}`, sid: undefined, expS: undefined };
          d.hub.add(res, owner, [['cluster', d.view()]], now);
          d.watched();
          return;
        }
        case 'history':
        case 'alarms':
        case 'log':
        case 'sync':
          // Every board holds them: answered here.
          operatorApi(d.operator(), method, new URL(url, 'http://board'), req.headers.accept, null, res);
          return;
        case 'backup':
          return backupRoutes({ ...d, raw: d.running.raw }).backup(res);
        case 'config':
          return sendJson(res, 200, { board: d.self.id, configVersion: d.running.configVersion, configHash: d.running.digest, config: redactConfig(d.running.raw) });
        case 'config-push':
          return d.push.route(req, res, who?.user ?? null);
        case 'config-apply':
          return d.apply.route(req, res);
        case 'upgrade':
        case 'rollback':
          return d.upgrade.rollout.route(req, res, who?.user ?? null, own.handler);
        case 'upgrade-apply':
          return d.upgrade.board.route(req, res);
        case 'rollback-apply':
          return d.upgrade.board.rollbackRoute(req, res);
        case 'restore':
          return backupRoutes({ ...d, raw: d.running.raw }).restore(req, res);
        case 'alarm-ack': {
          if (!operatorApi(d.operator(), method, new URL(url, 'http://board'), undefined, who?.user ?? null, res)) throw new EwsError('NOT_FOUND', 'use POST /api/alarms/{id}/ack');
          return;
        }
        case 'stats':
          // The master's queue: answered by the master itself, never queued.
          return sendJson(res, 200, d.intake.stats());
        case 'drain':
          await readBody(req, d.cfg.limits.bodyBytesMax); // none is expected: read, so the connection stays usable
          return drainRoute({ cfg: d.running.cfg, mirror, operator: d.operator }, path, who?.user ?? null, res);
        case 'handover':
          await readBody(req, d.cfg.limits.bodyBytesMax);
          return handoverRoute({ cfg: d.running.cfg, mirror, operator: d.operator, pause: (ms) => d.intake.pauseDispatch(ms) }, new URL(url, 'http://board'), who?.user ?? null, res);
        default: {
          const unanswered: never = own;
          throw new Error(`no answer for ${JSON.stringify(unanswered)}`);
        }
      }
    }
    const body = await readBody(req, d.cfg.limits.bodyBytesMax);
    if (this.queue(req, res, path, body)) return;
    // Not the master: pass it on, once. A request that was already passed on is not bounced again.
    // The moment mastership moves (a handover, a takeover) no master is known here, or one passed
    // it here before this board has taken over: the request waits for it, within Tmax.
    const via = req.headers['x-ews-via'] !== undefined;
    const settled = () => mirror.role === 'master' || (!via && mirror.master >= 0);
    for (const end = Date.now() + d.cfg.cluster.tmaxMs; !settled() && Date.now() < end && !d.closing(); ) await new Promise((r) => setTimeout(r, MASTER_POLL_MS));
    if (this.queue(req, res, path, body)) return;
    if (via || mirror.master < 0) throw new EwsError('NO_MASTER');
    d.relay.relay(mirror.master, req, res, body);
  }
}
