// Who is asking, and may they? Bearer tokens (scripts) or the session cookie (the UI); a
// cookie-authenticated state change must also come from one of the cluster's own origins and
// carry the session's CSRF token. With `auth.disabled` everyone is an operator.

import type { IncomingHttpHeaders } from 'node:http';
import type { AuthConfig, Config, UserConfig } from '../../shared/config.ts';
import { cookieValue } from '../../shared/cookie.ts';
import { EwsError } from '../../shared/errors.ts';
import { type Role, roleAtLeast } from '../../shared/routes.ts';
import { SERVICE_SESSION_TTL_S, type Session, type SessionSigner } from './session.ts';

export const COOKIE = 'ews_session';

export interface Principal {
  user: string;
  role: Role;
  via: 'cookie' | 'bearer' | 'open';
  session: Session | undefined;
}

export type Need = 'public' | Role;

/** The origins the UI may be served from: every board, and the cluster address on the boards' ports. */
export function clusterOrigins(cfg: Config): Set<string> {
  const out = new Set<string>();
  const add = (host: string, port: number) => {
    for (const scheme of ['http', 'https']) {
      out.add(`${scheme}://${host}:${port}`);
      if ((scheme === 'http' && port === 80) || (scheme === 'https' && port === 443)) out.add(`${scheme}://${host}`);
    }
  };
  for (const b of cfg.boards) {
    add(b.address, b.httpPort);
    if (cfg.cluster.vip) add(cfg.cluster.vip.address, b.httpPort);
    if (b.address === '127.0.0.1') add('localhost', b.httpPort);
  }
  return out;
}

export class AuthGuard {
  private readonly origins: Set<string>;
  private auth: AuthConfig | undefined;
  constructor(
    private readonly cfg: Config,
    readonly signer: SessionSigner,
  ) {
    this.origins = clusterOrigins(cfg);
    this.auth = cfg.auth;
  }

  /** The configured users as they are now (a SIGHUP reload replaces them: removals and role changes apply at once). */
  get users(): readonly UserConfig[] {
    return this.auth?.users ?? [];
  }

  /** A reloaded config's users; turning login on or off needs a restart. */
  reloadUsers(next: AuthConfig | undefined): boolean {
    if (!next || next.disabled !== this.open) return false;
    this.auth = next;
    return true;
  }

  get open(): boolean {
    return this.cfg.auth?.disabled !== false;
  }

  /**
   * Headers for a call of this board's own services (schedules, MQTT commands, a gap's sync) to a
   * board's port: a short-lived operator session of their own, marked as a service's.
   */
  serviceHeaders(name: string, nowMs: number): Record<string, string> {
    return this.open ? {} : { authorization: `Bearer ${this.signer.issue(name, 'operator', SERVICE_SESSION_TTL_S, nowMs, true).token}` };
  }

  allowedOrigin(origin: string): boolean {
    return this.origins.has(origin);
  }

  principal(req: { readonly headers: IncomingHttpHeaders }, nowMs: number): Principal | undefined {
    if (this.open) return { user: 'anonymous', role: 'admin', via: 'open', session: undefined };
    const auth = req.headers.authorization;
    const bearer = auth?.startsWith('Bearer ');
    const token = bearer ? auth!.slice(7).trim() : cookieValue(req.headers.cookie, COOKIE);
    const s = token ? this.signer.verify(token, nowMs) : undefined;
    const role = s && this.currentRole(s);
    return s && role && { user: s.user, role, via: bearer ? 'bearer' : 'cookie', session: s };
  }

  /** Whether the request carries a session that verifies (signature, expiry, revocation, the user still configured): admission's transactional rule. */
  verifiedSession(req: { readonly headers: IncomingHttpHeaders }, nowMs: number): boolean {
    return !this.open && this.principal(req, nowMs)?.session !== undefined;
  }

  /** A session counts for the user as the config has them now: a removed user's sessions are dead, a changed role applies at once. */
  private currentRole(s: Session): Role | undefined {
    if (s.svc === 1) return s.role;
    return this.users.find((u) => u.name === s.user)?.role;
  }

  /** Same-origin or one of the cluster's origins (Origin, else Referer). */
  sameSite(req: { readonly headers: IncomingHttpHeaders }): boolean {
    let origin = req.headers.origin;
    if (!origin && typeof req.headers.referer === 'string') {
      try {
        origin = new URL(req.headers.referer).origin;
      } catch {
        return false;
      }
    }
    if (!origin) return false;
    const host = req.headers.host;
    return (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)) || this.origins.has(origin);
  }

  /** Throws 401/403 unless the request may go on. */
  check(req: { readonly headers: IncomingHttpHeaders }, need: Need, nowMs: number): Principal | undefined {
    if (need === 'public') return undefined;
    const p = this.principal(req, nowMs);
    if (!p) throw new EwsError('UNAUTHENTICATED', 'log in first (POST /api/login)');
    if (!roleAtLeast(p.role, need))
      throw new EwsError(
        'FORBIDDEN',
        need === 'operator' ? `${p.user} is a viewer; controlling devices needs an operator` : `${p.user} is ${p.role === 'viewer' ? 'a viewer' : 'an operator'}; this needs an admin`,
      );
    if (need !== 'viewer' && p.via === 'cookie') {
      if (!this.sameSite(req)) throw new EwsError('FORBIDDEN', 'cross-site request refused');
      if (!this.signer.csrfOk(p.session!, typeof req.headers['x-csrf-token'] === 'string' ? req.headers['x-csrf-token'] : undefined)) throw new EwsError('FORBIDDEN', 'missing or wrong X-CSRF-Token');
    }
    return p;
  }
}

export { cookieValue };
