// CGI/1.1 (RFC 3875) as pure functions: which request reaches which program, the environment a
// program gets (the meta-variables and nothing else: no variable a request could name, no secret
// of ews), and the answer read back from its output. The board's runner spawns the program and
// feeds these; nothing here touches a process or a socket.

/** Names ews's own handlers answer under /cgi-bin/: a program may not take them. */
export const RESERVED_PROGRAMS: readonly string[] = ['devices', 'echo', 'burn'];
/** A program's name: one path segment of plain characters. */
export const PROGRAM_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** The longest header block a program may print before its body. */
export const CGI_HEADER_BYTES_MAX = 16 * 1024;
/** PATH for every program: the system's directories, never a request's. */
export const CGI_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Why a name cannot be a program's, or undefined when it can. */
export function programNameProblem(name: string): string | undefined {
  if (!PROGRAM_NAME_RE.test(name)) return 'must be 1-64 of A-Z a-z 0-9 . _ - and not start with . _ -';
  if (RESERVED_PROGRAMS.includes(name)) return `is the name of a built-in handler (${RESERVED_PROGRAMS.join(', ')} are reserved)`;
  return undefined;
}

export interface ProgramTarget {
  readonly name: string;
  /** What follows the name, `/` included; '' when nothing does. */
  readonly pathInfo: string;
  readonly query: string;
}

/** The program a canonical request target names (`/cgi-bin/NAME[/PATH_INFO][?QUERY]`), or undefined. */
export function programTarget(url: string): ProgramTarget | undefined {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (!path.startsWith('/cgi-bin/')) return undefined;
  const rest = path.slice('/cgi-bin/'.length);
  const slash = rest.indexOf('/');
  const name = slash < 0 ? rest : rest.slice(0, slash);
  if (!PROGRAM_NAME_RE.test(name) || RESERVED_PROGRAMS.includes(name)) return undefined;
  return { name, pathInfo: slash < 0 ? '' : rest.slice(slash), query: q < 0 ? '' : url.slice(q + 1) };
}

/** Request headers a program never sees: credentials, and what the cluster says to itself. */
const HIDDEN = /^(authorization|cookie|proxy-authorization|x-ews-.*|x-csrf-token|x-forwarded-for|idempotency-key|content-type|content-length|connection|transfer-encoding|te|upgrade|keep-alive)$/;
const TOKEN = /^[A-Za-z0-9-]{1,64}$/;
/** Characters an environment value may not hold (a NUL ends it; newlines are a header's own). */
const UNSAFE_VALUE = /[\0\r\n]/g;

export interface CgiRequest {
  readonly method: string;
  readonly target: ProgramTarget;
  /** Header names and values in arrival order (name lower-case or not). */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly bodyBytes: number;
  readonly contentType: string | undefined;
  /** The client's address, as the master established it (not the master's). */
  readonly clientAddress: string;
  readonly serverName: string;
  readonly serverPort: number;
  readonly https: boolean;
  /** The logged-in user, and how they authenticated; undefined without a login. */
  readonly user: { readonly name: string; readonly role: string; readonly via: 'cookie' | 'bearer' } | undefined;
  readonly board: string;
  readonly idempotencyKey: string | undefined;
  /** The serial port the program has for itself while it runs (cgi.programs.NAME.port). */
  readonly devicePort: string | undefined;
  readonly serverSoftware: string;
}

/** The whole environment of a program: RFC 3875's meta-variables, ews's own, PATH; nothing else. */
export function cgiEnvironment(r: CgiRequest): Record<string, string> {
  const env: Record<string, string> = {
    PATH: CGI_PATH,
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    SERVER_SOFTWARE: r.serverSoftware,
    SERVER_NAME: r.serverName,
    SERVER_PORT: String(r.serverPort),
    REQUEST_METHOD: r.method,
    SCRIPT_NAME: `/cgi-bin/${r.target.name}`,
    QUERY_STRING: r.target.query,
    REMOTE_ADDR: r.clientAddress,
    EWS_BOARD: r.board,
  };
  if (r.target.pathInfo !== '') env.PATH_INFO = r.target.pathInfo;
  if (r.bodyBytes > 0 || r.method === 'POST' || r.method === 'PUT') env.CONTENT_LENGTH = String(r.bodyBytes);
  if (r.contentType !== undefined) env.CONTENT_TYPE = r.contentType;
  if (r.https) env.HTTPS = 'on';
  if (r.user) {
    env.REMOTE_USER = r.user.name;
    env.AUTH_TYPE = r.user.via === 'bearer' ? 'Bearer' : 'Cookie';
    env.EWS_USER_ROLE = r.user.role;
  }
  if (r.idempotencyKey !== undefined) env.EWS_IDEMPOTENCY_KEY = r.idempotencyKey;
  if (r.devicePort !== undefined) env.EWS_DEVICE_PORT = r.devicePort;
  for (const [rawName, value] of r.headers) {
    const name = rawName.toLowerCase();
    if (HIDDEN.test(name) || !TOKEN.test(name)) continue;
    const key = `HTTP_${name.toUpperCase().replaceAll('-', '_')}`;
    const v = value.replace(UNSAFE_VALUE, ' ');
    // Repeated headers join as HTTP/1.1 lists do (RFC 3875 §4.1.18).
    env[key] = env[key] === undefined ? v : `${env[key]}, ${v}`;
  }
  for (const k of Object.keys(env)) env[k] = env[k]!.replace(UNSAFE_VALUE, ' ');
  return env;
}

/** What a program answered: a document, a redirect within the cluster, or a refusal of its output. */
/** Marks a program's local redirect in a board's answer to the master (x-ews-* headers never reach a client). */
export const LOCAL_REDIRECT = 'x-ews-redirect';

/** The path of a program's local redirect in a board's answer headers (name, value pairs), if it is one. */
export function markedRedirect(pairs: readonly string[]): string | undefined {
  let location: string | undefined;
  let marked = false;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    if (pairs[i] === LOCAL_REDIRECT) marked = true;
    else if (pairs[i] === 'location') location = pairs[i + 1];
  }
  return marked ? location : undefined;
}

export type CgiAnswer =
  | { readonly kind: 'document'; readonly status: number; readonly reason: string; readonly headers: ReadonlyArray<readonly [string, string]>; readonly body: Buffer }
  /** `Location: /path` with no body of its own: the cluster serves that path instead (RFC 3875 §6.2.2). */
  | { readonly kind: 'local-redirect'; readonly location: string }
  | { readonly kind: 'bad'; readonly problem: string };

const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
/** Headers a program may not set: the board frames the answer itself. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'status']);

/** The answer in a program's whole output (RFC 3875 §6): a header block, a blank line, the body. */
export function parseCgiOutput(out: Buffer): CgiAnswer {
  // The header block ends at the first empty line (LF or CRLF line ends).
  let end = -1;
  let bodyAt = -1;
  for (let i = 0; i < Math.min(out.length, CGI_HEADER_BYTES_MAX + 4); i++) {
    if (out[i] !== 0x0a) continue;
    if (out[i + 1] === 0x0a) {
      end = i;
      bodyAt = i + 2;
      break;
    }
    if (out[i + 1] === 0x0d && out[i + 2] === 0x0a) {
      end = i;
      bodyAt = i + 3;
      break;
    }
  }
  if (end > 0 && out[end - 1] === 0x0d) end--;
  if (end < 0)
    return {
      kind: 'bad',
      problem: out.length > CGI_HEADER_BYTES_MAX ? `no end of the header block in its first ${CGI_HEADER_BYTES_MAX} bytes` : 'no header block (a blank line must follow the headers)',
    };
  const lines = out.subarray(0, end).toString('latin1').split(/\r?\n/);
  const headers: Array<[string, string]> = [];
  let status: number | undefined;
  let reason = '';
  let location: string | undefined;
  let contentType: string | undefined;
  for (const line of lines) {
    const m = FIELD.exec(line);
    if (!m) return { kind: 'bad', problem: `not a header line: ${JSON.stringify(line.slice(0, 80))}` };
    const name = m[1]!.toLowerCase();
    const value = m[2]!;
    if (name === 'status') {
      const s = /^([1-5]\d\d)(?: (.*))?$/.exec(value);
      if (!s || Number(s[1]) < 200) return { kind: 'bad', problem: `Status must be a code from 200 to 599 and a reason: ${JSON.stringify(value.slice(0, 40))}` };
      status = Number(s[1]);
      reason = s[2] ?? '';
    } else if (name === 'location') location = value;
    else if (name === 'content-type') contentType = value;
    if (!FRAMING.has(name)) headers.push([m[1]!, value]);
  }
  const body = out.subarray(bodyAt);
  if (location !== undefined) {
    if (location.startsWith('/') && !location.startsWith('//')) {
      if (status === undefined && body.length === 0 && headers.length === 1) return { kind: 'local-redirect', location };
    } else if (!/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s]+$/.test(location)) return { kind: 'bad', problem: `Location must be a local path or an absolute URL: ${JSON.stringify(location.slice(0, 80))}` };
    return { kind: 'document', status: status ?? 302, reason: status === undefined ? 'Found' : reason, headers, body };
  }
  if (contentType === undefined) return { kind: 'bad', problem: 'no Content-Type (a document answer needs one), no Location' };
  return { kind: 'document', status: status ?? 200, reason: status === undefined ? 'OK' : reason, headers, body };
}
