// A request for one of this board's CGI programs (RFC 3875): the environment from what the
// master sent (the client's address in X-Forwarded-For, the Host the client used), the run, and
// the answer or the error that says what went wrong. A keyed POST runs at most once across the
// cluster, through the idempotent executor, as a device action does.
import { cgiEnvironment, LOCAL_REDIRECT, type ProgramTarget } from '../../shared/cgi.ts';
import type { CgiProgramConfig } from '../../shared/cgi-config.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { parseUserLine } from '../../shared/user-line.ts';
import type { PortWorker } from '../devices/port-worker.ts';
import type { Answer } from '../http/http-io.ts';
import type { Captured, IdempotentExecutor } from '../idempotency/idempotent-exec.ts';
import type { Logger } from '../log.ts';
import { VERSION } from '../version.ts';
import type { Program } from './cgi-programs.ts';
import { type CgiOutcome, runCgi } from './cgi-runner.ts';
import type { ExecRequest } from './exec-request.ts';

const first = (v: string | string[] | undefined) => (typeof v === 'string' ? v : v?.[0]);

export async function programCgi(
  cfg: Config,
  board: BoardConfig,
  program: Program,
  options: CgiProgramConfig,
  target: ProgramTarget,
  x: ExecRequest,
  idem: IdempotentExecutor,
  log: Logger,
  /** The worker of `options.port` when this board has that port. */
  port: PortWorker | undefined,
): Promise<Captured> {
  if (program.unsafe) throw new EwsError('CGI_UNSAFE', `${program.name}: ${program.unsafe}`);
  const host = first(x.headers.host) ?? board.address;
  const colon = host.lastIndexOf(':');
  const headers: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(x.headers)) for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) headers.push([k, one]);
  const key = first(x.headers['idempotency-key']);
  const env = cgiEnvironment({
    method: x.method,
    target,
    headers,
    bodyBytes: x.body.length,
    contentType: first(x.headers['content-type']),
    clientAddress: (first(x.headers['x-forwarded-for']) ?? '').split(',')[0]!.trim() || board.address,
    serverName: colon > 0 ? host.slice(0, colon) : host,
    serverPort: colon > 0 ? Number(host.slice(colon + 1)) || board.httpPort : board.httpPort,
    https: cfg.tls !== undefined,
    // The user the master's guard established; only the master sets the header.
    user: parseUserLine(first(x.headers['x-ews-user'])),
    board: board.id,
    idempotencyKey: key,
    devicePort: options.port,
    serverSoftware: `ews/${VERSION}`,
  });
  const spawnOnce = () => {
    // Its client left while it waited (for the port): nothing is started for nobody.
    if (x.signal.aborted && key === undefined) return Promise.resolve<CgiOutcome>({ kind: 'cancelled' });
    const r = runCgi({
      file: program.file,
      env,
      body: x.body,
      timeoutMs: options.timeoutMs,
      outputBytesMax: cfg.limits.answerBytesMax,
      cwd: program.file.slice(0, program.file.lastIndexOf('/')) || '/',
    });
    x.signal.onAbort(() => {
      // A keyed command already started runs to its end: its outcome is recorded.
      if (key === undefined) r.cancel();
    });
    return r.done;
  };
  const run = async (): Promise<Captured> => {
    // With a `port`, the program has it to itself: the port's worker lends it as one of its jobs.
    const o = port ? await port.lend(options.class === 'page' ? 'scheduled' : 'control', spawnOnce) : await spawnOnce();
    if ('stderr' in o && o.stderr) log.warn({ program: program.name, stderr: o.stderr }, 'cgi: the program wrote to stderr');
    if (o.kind === 'timeout') throw new EwsError('CGI_TIMEOUT', `${program.name} ran past ${options.timeoutMs} ms`);
    if (o.kind === 'too-large') throw new EwsError('ANSWER_TOO_LARGE', `${program.name} printed more than limits.answerBytesMax`);
    if (o.kind === 'cancelled') throw new EwsError('SHUTTING_DOWN', 'the client went away');
    if (o.kind === 'spawn-failed') throw new EwsError('CGI_BAD_HEADER', `${program.name} could not be started: ${o.message}`);
    const a = o.answer;
    if (a.kind === 'bad') throw new EwsError('CGI_BAD_HEADER', `${program.name}: ${a.problem}`);
    // A local redirect: the master serves the path instead (a 302 the client never sees, marked so).
    if (a.kind === 'local-redirect') return { status: 302, body: '', headers: { location: a.location, [LOCAL_REDIRECT]: 'local' } };
    const h: Record<string, string> = {};
    for (const [k, v] of a.headers) h[k.toLowerCase()] = h[k.toLowerCase()] === undefined ? v : `${h[k.toLowerCase()]}, ${v}`;
    return { status: a.status, body: a.body.toString('latin1'), headers: h };
  };
  if (x.method !== 'POST' || key === undefined) return run();
  return idem.request(key, x.method, x.url, x.body, run);
}

/** Writes a program's captured answer (its body kept byte for byte as latin1). */
export function sendProgramAnswer(res: Answer, c: Captured, extra: Record<string, string> = {}): void {
  const body = Buffer.from(c.body, 'latin1');
  res.writeHead(c.status, { 'cache-control': 'no-store', ...c.headers, ...extra, 'content-length': body.length });
  res.end(body);
}
