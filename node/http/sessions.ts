// Sessions over HTTP: login (scrypt, rate limited per client and per user, the same work for
// unknown users), logout (the session is revoked on every board) and "who am I".
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { LoginAdmission } from '../../shared/login-admission.ts';
import { type AuthGuard, COOKIE } from '../auth/guard.ts';
import { NOBODY_HASH, PasswordVerifier } from '../auth/password.ts';
import { RateLimiter } from '../auth/rate-limit.ts';
import type { RevokedSessions } from '../auth/revoked-sessions.ts';
import { readBody, sendJson } from './http-io.ts';

export class SessionRoutes {
  private readonly loginByClient = new RateLimiter(10, 10);
  private readonly loginByUser = new RateLimiter(5, 5);
  private readonly passwords: PasswordVerifier;
  private readonly admission: LoginAdmission;

  /** `loggedOut`: tell every board a session is revoked, and end its event streams. */
  /** Every password checked, right or wrong (the audit log). */
  onLogin: (user: string, ok: boolean, client: string) => void = () => {};

  constructor(
    private readonly cfg: Config,
    private readonly guard: AuthGuard,
    private readonly revoked: RevokedSessions,
    private readonly loggedOut: (revoked: ReturnType<RevokedSessions['revoke']>) => void,
  ) {
    this.passwords = new PasswordVerifier(cfg.limits.loginsWaitingMax);
    this.admission = new LoginAdmission(cfg.limits.loginsWaitingMax + 1);
  }

  async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const auth = this.cfg.auth;
    if (req.headers.origin && !this.guard.sameSite(req)) throw new EwsError('FORBIDDEN', 'cross-site login refused');
    const raw = await readBody(req, 4096);
    let name = '',
      password = '';
    try {
      const b = JSON.parse(raw.toString('utf8')) as { name?: unknown; password?: unknown };
      if (typeof b.name === 'string' && typeof b.password === 'string' && b.name.length <= 128 && b.password.length <= 1024) ({ name, password } = b as { name: string; password: string });
    } catch {
      /* handled below */
    }
    if (!name) throw new EwsError('BAD_REQUEST', 'send {"name": …, "password": …}');
    const now = Date.now();
    // Per client, and per client and user: a stranger's wrong guesses cannot lock the real operator out.
    const client = req.socket.remoteAddress ?? '?';
    const wait = Math.max(this.loginByClient.take(client, now), this.loginByUser.take(`${client}\0${name}`, now));
    if (wait > 0) throw new EwsError('RATE_LIMITED', undefined, { retryAfterS: wait });
    if (!auth || auth.disabled) return sendJson(res, 200, { token: '', role: 'admin', csrf: '', expiresAt: null, open: true });
    const user = this.guard.users.find((u) => u.name === name);
    // One check per source at a time, and room kept for sources that logged in before: a flood from many addresses cannot starve them.
    const admit = this.admission.admit(client);
    if (admit !== 'ok') throw new EwsError('QUEUE_FULL', admit === 'source-busy' ? 'a login from this address is being checked; wait for it' : 'too many logins in progress', { retryAfterS: 1 });
    let ok = false;
    try {
      // The same scrypt work whether or not the user exists.
      ok = (await this.passwords.verify(password, user?.passwordHash ?? NOBODY_HASH)) && user !== undefined;
    } finally {
      this.admission.done(client, ok);
    }
    this.onLogin(name, ok, client);
    if (!ok || !user) throw new EwsError('UNAUTHENTICATED', 'wrong name or password');
    const { token, session } = this.guard.signer.issue(user.name, user.role, auth.sessionTtlS, now);
    const secure = (req.socket as { encrypted?: boolean }).encrypted ? '; Secure' : '';
    res.setHeader('set-cookie', `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${auth.sessionTtlS}${secure}`);
    sendJson(res, 200, { token, role: user.role, user: user.name, csrf: this.guard.signer.csrf(session), expiresAt: session.exp * 1000 });
  }

  logout(req: IncomingMessage, res: ServerResponse): void {
    if (req.headers.origin && !this.guard.sameSite(req)) throw new EwsError('FORBIDDEN', 'cross-site logout refused');
    // The token dies everywhere, not just the cookie here: on disk here, and on every board.
    const p = this.guard.principal(req, Date.now());
    if (p?.session) this.loggedOut(this.revoked.revoke(p.session.sid, p.session.exp, p.session.user, Date.now()));
    res.setHeader('set-cookie', `${COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`);
    sendJson(res, 200, { ok: true });
  }

  session(req: IncomingMessage, res: ServerResponse): void {
    const p = this.guard.principal(req, Date.now());
    if (!p) throw new EwsError('UNAUTHENTICATED', 'not logged in');
    sendJson(res, 200, { user: p.user, role: p.role, csrf: p.session ? this.guard.signer.csrf(p.session) : '', expiresAt: p.session ? p.session.exp * 1000 : null, open: p.via === 'open' });
  }
}
