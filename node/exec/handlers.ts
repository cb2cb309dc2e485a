// What a board runs once the master has dispatched a request to it (the route table's
// `dispatched` and `device` routes): the device CGI (through the idempotent executor), the device
// list, the built-in slow CGIs (`/cgi-bin/echo`, `/echo`, and `/cgi-bin/burn` for benchmarks), and
// the web UI's files at the request's content level.

import { LOCAL_REDIRECT, type ProgramTarget, programTarget } from '../../shared/cgi.ts';
import { PROGRAM_DEFAULTS } from '../../shared/cgi-config.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { cookieValue } from '../../shared/cookie.ts';
import { EwsError } from '../../shared/errors.ts';
import type { DeviceDirectory } from '../devices/device-directory.ts';
import type { DeviceManager } from '../devices/device-manager.ts';
import { type Answer, sendError, sendJson } from '../http/http-io.ts';
import type { Captured, IdempotentExecutor } from '../idempotency/idempotent-exec.ts';
import type { Logger } from '../log.ts';
import { CONTENT_LEVELS, type LevelFiles, loadSite } from '../ui/site.ts';
import { type Program, scanPrograms } from './cgi-programs.ts';
import { deviceCgi } from './device-cgi.ts';
import type { ExecRequest } from './exec-request.ts';
import { programCgi, sendProgramAnswer } from './program-cgi.ts';

/** The slow CGI's longest wait: a board's slot is not lent for longer. */
export const ECHO_MS_MAX = 10_000;
export const ECHO_BYTES_MAX = 1 << 20;
export const BURN_MS_MAX = 1000;

/** A request target's path and query. */
interface Target {
  readonly pathname: string;
  readonly searchParams: URLSearchParams;
}
export class Handlers {
  private readonly site: LevelFiles[];
  /** Work done for clients that had already gone, in all (ms): what an abort saves. */
  wastedMs = 0;
  constructor(
    /** The running config (a push changes its devices live). */
    private readonly running: { readonly cfg: Config },
    private readonly board: BoardConfig,
    private readonly devices: DeviceManager,
    private readonly directory: DeviceDirectory,
    private readonly idem: IdempotentExecutor,
    private readonly log: Logger,
  ) {
    this.site = loadSite();
    this.programs = scanPrograms(board.cgiDir ?? running.cfg.cgi.dir, log);
  }

  /** This board's CGI programs, as they were at boot. */
  readonly programs: ReadonlyMap<string, Program>;

  async execute(x: ExecRequest, res: Answer): Promise<void> {
    res.setHeader('x-ews-board', this.board.id);
    res.setHeader('x-ews-class', x.cls);
    // The target is canonical origin-form (checked at the edge): its path and query split as they
    // stand, without a WHATWG URL per request.
    const q = x.url.indexOf('?');
    const u: Target = { pathname: q < 0 ? x.url : x.url.slice(0, q), searchParams: new URLSearchParams(q < 0 ? '' : x.url.slice(q + 1)) };
    try {
      // The slow CGI (HIGH) and a slow page (LOW) with the same service model, for demos and benchmarks.
      if (u.pathname === '/cgi-bin/echo' || u.pathname === '/echo' || u.pathname.startsWith('/echo/')) return await this.echo(u, x, res);
      if (u.pathname === '/cgi-bin/burn' && this.running.cfg.benchmarkHandlers) return this.burn(u, res);
      if (u.pathname.startsWith('/cgi-bin/devices/')) return await this.device(x, u.pathname, res);
      const program = programTarget(x.url);
      if (program) return await this.program(program, x, res);
      if (u.pathname === '/api/devices' && x.method === 'GET') return sendJson(res, 200, this.directory.list());
      if (x.method === 'GET' || x.method === 'HEAD') return this.page(x, u, res);
      throw new EwsError('NOT_FOUND', `no page at ${u.pathname}`);
    } catch (e) {
      sendError(res, e);
    }
  }

  private async device(x: ExecRequest, path: string, res: Answer): Promise<void> {
    const key = x.headers['idempotency-key'];
    const reply = (c: Captured, extra: Record<string, string> = {}) => {
      res.writeHead(c.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(c.body), 'cache-control': 'no-store', ...c.headers, ...extra });
      res.end(c.body);
    };
    if (x.method !== 'POST' || key === undefined) return reply(await deviceCgi(this.running.cfg, this.board, this.devices, x, path));
    // The master scoped the client's key to its user (node/http/router.ts).
    const out = await this.idem.request(key, x.method, path, x.body, () => deviceCgi(this.running.cfg, this.board, this.devices, x, path));
    reply(out, out.replayed ? { 'idempotent-replayed': 'true', 'x-ews-board': this.running.cfg.boards[out.board]?.id ?? this.board.id } : {});
  }

  private async program(t: ProgramTarget, x: ExecRequest, res: Answer): Promise<void> {
    const p = this.programs.get(t.name);
    if (!p) throw new EwsError('NOT_FOUND', `no program ${t.name} on ${this.board.id}`);
    const options = this.running.cfg.cgi.programs[t.name] ?? PROGRAM_DEFAULTS;
    const port = options.port === undefined ? undefined : this.devices.worker(options.port);
    const out = await programCgi(this.running.cfg, this.board, p, options, t, x, this.idem, this.log, port);
    // Run on the master itself: its intake serves a local redirect; a dispatched one goes back marked.
    if (x.redirect && out.status === 302 && out.headers?.[LOCAL_REDIRECT] !== undefined && out.headers.location) return x.redirect(out.headers.location);
    const replayed = 'replayed' in out && out.replayed === true;
    sendProgramAnswer(res, out, replayed ? { 'idempotent-replayed': 'true' } : {});
  }

  private async echo(u: Target, x: ExecRequest, res: Answer): Promise<void> {
    const raw = u.searchParams.get('ms') ?? '0';
    if (!/^\d{1,6}$/.test(raw) || Number(raw) > ECHO_MS_MAX) throw new EwsError('BAD_REQUEST', `ms must be an integer from 0 to ${ECHO_MS_MAX}`);
    // As a page (`/echo…`), a lighter content level does proportionally less work and sends less:
    // what a degraded page saves, for the content-adaptation experiments.
    const scale = u.pathname.startsWith('/echo') && x.level < CONTENT_LEVELS ? x.level / CONTENT_LEVELS : 1;
    res.setHeader('x-ews-level', String(x.level));
    const ms = Math.round(Number(raw) * scale);
    const started = performance.now();
    if (ms > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        x.signal.onAbort(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    if (x.signal.aborted) {
      // Stopped as soon as the client left: only the time until then was spent for nobody.
      this.wastedMs += performance.now() - started;
      res.destroy();
      return;
    }
    // `bytes=N` pads the answer to about N bytes: content of a known size, for `ews calibrate`.
    const pad = Math.round(scale * Math.min(ECHO_BYTES_MAX, Math.max(0, Number(u.searchParams.get('bytes') ?? 0) || 0)));
    sendJson(res, 200, { ok: true, board: this.board.id, ms: Math.round(performance.now() - started), bytes: x.body.length, ...(pad > 0 ? { pad: 'x'.repeat(pad) } : {}) });
  }

  /** Benchmarks only: a CPU-bound CGI that keeps the board busy for `ms` of CPU time. */
  private burn(u: Target, res: Answer): void {
    const raw = u.searchParams.get('ms') ?? '0';
    if (!/^\d{1,4}$/.test(raw) || Number(raw) > BURN_MS_MAX) throw new EwsError('BAD_REQUEST', `ms must be an integer from 0 to ${BURN_MS_MAX}`);
    const cpu = (): number => {
      const c = process.cpuUsage();
      return c.user + c.system;
    };
    const until = cpu() + Number(raw) * 1000;
    let x = 0;
    while (cpu() < until) for (let i = 0; i < 1000; i++) x += Math.sqrt(i);
    sendJson(res, 200, { ok: true, board: this.board.id, burnedMs: Number(raw), x: x > 0 });
  }

  /** A file of the content level: the master's level, lowered if the client asked for less (?level=N, remembered in a cookie). */
  private page(x: ExecRequest, u: Target, res: Answer): void {
    const name = u.pathname === '/' ? 'index.html' : u.pathname.slice(1);
    // A flat namespace of known files: nothing else can be named, so nothing else can be reached.
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) throw new EwsError('NOT_FOUND', 'no such page');
    // `?tree=` is the old name of `?level=`, still taken.
    const param = u.searchParams.get('level') ?? u.searchParams.get('tree');
    const asked = Number(param ?? cookieValue(typeof x.headers.cookie === 'string' ? x.headers.cookie : undefined, 'ews_level') ?? CONTENT_LEVELS);
    const level = Math.max(1, Math.min(x.level, Number.isInteger(asked) && asked >= 1 ? asked : CONTENT_LEVELS, CONTENT_LEVELS));
    const file = this.site[level - 1]?.get(name);
    if (!file) throw new EwsError('NOT_FOUND', `no page ${name.slice(0, 64)}`);
    const headers: Record<string, string> = { 'content-type': file.type, etag: file.etag, 'cache-control': 'no-cache', 'x-ews-level': String(level) };
    if (param !== null) headers['set-cookie'] = `ews_level=${level}; Path=/; SameSite=Strict; Max-Age=31536000`;
    if (x.headers['if-none-match'] === file.etag) {
      res.writeHead(304, headers);
      return void res.end();
    }
    headers['content-length'] = String(file.body.length);
    res.writeHead(200, headers);
    res.end(x.method === 'HEAD' ? undefined : file.body);
  }
}
