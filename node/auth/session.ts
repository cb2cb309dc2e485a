// Sessions that survive a failover: a token signed with a key derived from the cluster key, so
// any board can check it and no board has to remember it. The CSRF token is derived from the
// session id, so it is bound to the session and never stored either.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ROLES, type Role } from '../../shared/routes.ts';

/** `svc`: an internal caller of this board (schedules, the MQTT bridge), not a configured user. */
export interface Session {
  sid: string;
  user: string;
  role: Role;
  exp: number;
  /** When it was issued (ms): a user's not-valid-before time kills the sessions issued before it. */
  iat?: number;
  svc?: 1;
}

/** How long a board's own service sessions (schedules, MQTT, sync) last. */
export const SERVICE_SESSION_TTL_S = 300;

export class SessionSigner {
  /** Derived from the cluster key first (what this board signs with), then from each accepted key (cluster.acceptKeys: a key change under way). */
  private readonly keys: Buffer[];
  private readonly csrfKeys: Buffer[];
  /** `revoked`: sessions logged out before they expire. */
  constructor(
    clusterKey: Buffer,
    private readonly revoked: { has(sid: string): boolean; notBefore(user: string): number },
    acceptKeys: readonly Buffer[] = [],
  ) {
    this.keys = [clusterKey, ...acceptKeys].map((k) => createHmac('sha256', k).update('ews-session-v1').digest());
    this.csrfKeys = [clusterKey, ...acceptKeys].map((k) => createHmac('sha256', k).update('ews-csrf-v1').digest());
  }

  issue(user: string, role: Role, ttlS: number, nowMs: number, service = false): { token: string; session: Session } {
    const session: Session = { sid: randomBytes(12).toString('base64url'), user, role, exp: Math.floor(nowMs / 1000) + ttlS, iat: nowMs, ...(service ? { svc: 1 as const } : {}) };
    const payload = Buffer.from(JSON.stringify(session)).toString('base64url');
    return { token: `v1.${payload}.${this.tag(payload)}`, session };
  }

  verify(token: string, nowMs: number): Session | undefined {
    if (token.length > 1024) return undefined;
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== 'v1') return undefined;
    const given = Buffer.from(parts[2]!, 'base64url');
    const signed = this.keys.some((k) => {
      const want = Buffer.from(this.tag(parts[1]!, k), 'base64url');
      return given.length === want.length && timingSafeEqual(given, want);
    });
    if (!signed) return undefined;
    let s: Session;
    try {
      s = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Session;
    } catch {
      return undefined;
    }
    if (typeof s !== 'object' || s === null || typeof s.sid !== 'string' || typeof s.user !== 'string' || typeof s.exp !== 'number' || s.exp * 1000 <= nowMs || !ROLES.includes(s.role))
      return undefined;
    if (this.revoked.has(s.sid) || (typeof s.iat === 'number' ? s.iat : 0) < this.revoked.notBefore(s.user)) return undefined;
    return s;
  }

  csrf(session: Session, csrfKey: Buffer = this.csrfKeys[0]!): string {
    return createHmac('sha256', csrfKey).update(session.sid).digest('base64url').slice(0, 32);
  }

  csrfOk(session: Session, given: string | undefined): boolean {
    if (!given) return false;
    const g = Buffer.from(given);
    return this.csrfKeys.some((k) => {
      const want = Buffer.from(this.csrf(session, k));
      return g.length === want.length && timingSafeEqual(g, want);
    });
  }

  private tag(payload: string, key: Buffer = this.keys[0]!): string {
    return createHmac('sha256', key).update(payload).digest('base64url');
  }
}
