// Every error a client can see, in one table (fastify/undici style). `retry: 'board'`: another
// board of the cluster may answer the same request (the web UI and clients fail over on these).
// Handlers throw EwsError(code); one function turns it into a response.

export const ERRORS = {
  BAD_REQUEST: { status: 400, message: 'invalid request' },
  BAD_BUNDLE: { status: 400, message: 'the release bundle is refused: unsigned, tampered, signed with another key, or for another architecture' },
  BAD_CONFIG: { status: 400, message: 'the config has problems (each named in `problems`); nothing was applied anywhere' },
  UNAUTHENTICATED: { status: 401, message: 'not logged in' },
  FORBIDDEN: { status: 403, message: 'not allowed' },
  NOT_FROM_MASTER: { status: 403, message: 'this board executes only requests dispatched by the master' },
  NOT_FOUND: { status: 404, message: 'no such page' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'method not allowed' },
  IDEMPOTENCY_CONFLICT: { status: 409, message: 'idempotency key reused with another body' },
  IDEMPOTENCY_UNKNOWN: { status: 409, message: "the board running this key's command failed before its outcome was recorded: the device may have run it, so read the device; it is never run again" },
  IDEMPOTENCY_PENDING: { status: 409, message: 'a request with this idempotency key is still in progress (or its board was lost mid-way)' },
  NOT_ACTIVE: { status: 409, message: 'the alarm is not active: there is nothing to acknowledge' },
  CONFIG_STALE: { status: 409, message: 'the config is not newer than the one the cluster runs: raise its configVersion' },
  PUSH_IN_PROGRESS: { status: 409, message: 'another config push is under way; push again when it has finished' },
  NO_SUCCESSOR: { status: 409, message: 'no board can take over: a successor must be running and not drained' },
  CONFIG_NOT_APPLIED: { status: 422, message: 'this board cannot run the config (it keeps the one it runs)' },
  UPGRADE_NOT_POSSIBLE: { status: 422, message: 'this board cannot take a release: no upgrade.publicKey, or it does not run from a releases layout' },
  BODY_TOO_LARGE: { status: 413, message: 'request body too large' },
  RATE_LIMITED: { status: 429, message: 'too many attempts; wait and try again' },
  HEADERS_TOO_LARGE: { status: 431, message: 'request headers too large' },
  IDEMPOTENCY_STORE_FULL: { status: 503, message: 'every idempotency key held is still live: this new key was not run; retry later' },
  QUEUE_FULL: { status: 503, message: 'queue full for this class; retry later' },
  NO_MASTER: { status: 503, message: 'no master reachable; the cluster is electing one', retry: 'board' },
  NO_BOARD: { status: 503, message: 'no eligible board can serve this request', retry: 'board' },
  OVERLOADED: { status: 503, message: 'the cluster is overloaded: refused until the load falls (content adaptation, or a standing queue)' },
  SHUTTING_DOWN: { status: 503, message: 'board is shutting down', retry: 'board' },
  BOARD_FAILED: { status: 502, message: 'the executing board failed before answering', retry: 'board' },
  ANSWER_TOO_LARGE: { status: 502, message: "the executing board's answer is over limits.answerBytesMax" },
  DEVICE_ERROR: { status: 502, message: 'the device answered with an error or garbage' },
  CGI_BAD_HEADER: { status: 502, message: 'the CGI program printed no valid header block' },
  CGI_TIMEOUT: { status: 504, message: 'the CGI program did not finish in its timeoutMs and was stopped' },
  CGI_REDIRECT_LOOP: { status: 502, message: "the CGI program's local redirects went on past 3 hops" },
  CGI_UNSAFE: { status: 503, message: 'the CGI program or its directory is writable by someone other than root: it is not run' },
  DEVICE_TIMEOUT: { status: 504, message: 'the device did not answer in time' },
  DEVICE_OFFLINE: { status: 503, message: 'the device is offline (its serial port is gone); retry later' },
  DEVICE_UNREACHABLE: { status: 503, message: 'every board the device is attached to is down' },
  MAINTENANCE: { status: 503, message: 'every board that can serve it is drained for maintenance' },
  DEVICE_BUSY: { status: 503, message: 'too many requests queued for this device port; retry later' },
  DISPATCH_TIMEOUT: { status: 504, message: 'the executing board did not answer in time' },
  QUEUE_TIMEOUT: { status: 503, message: 'request waited in the queue longer than its deadline' },
  INTERNAL: { status: 500, message: 'internal error' },
} as const satisfies Record<string, { status: number; message: string; retry?: 'board' }>;

export type ErrorCode = keyof typeof ERRORS;

export class EwsError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryAfterS: number | undefined;
  /** Every problem found, where there may be many (a config's `path: problem` lines). */
  readonly problems: readonly string[] | undefined;
  constructor(code: ErrorCode, message?: string, opts: { retryAfterS?: number; problems?: readonly string[] } = {}) {
    super(message ?? ERRORS[code].message);
    this.code = code;
    this.status = ERRORS[code].status;
    this.retryAfterS = opts.retryAfterS ?? (this.status === 503 || this.status === 429 ? 1 : undefined);
    this.problems = opts.problems;
  }
}

export interface ErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The one place an error becomes an HTTP response. Unknown errors are 500 and never leak internals. */
export function errorResponse(err: unknown): ErrorResponse {
  const e = err instanceof EwsError ? err : new EwsError('INTERNAL');
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (e.retryAfterS !== undefined) headers['retry-after'] = String(e.retryAfterS);
  return { status: e.status, headers, body: JSON.stringify({ error: { code: e.code, message: e.message, ...(e.problems ? { problems: e.problems } : {}) } }) };
}
