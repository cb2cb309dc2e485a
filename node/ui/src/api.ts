// Every call goes to the current board; if it cannot answer for the cluster (network error, no
// master, its board failed), the next board the page knows. Retries keep the same Idempotency-Key.
import { banner, reconnected, sleep } from './dom.ts';

export interface ApiError {
  error?: { code: string; message: string };
}
export interface Answer<T> {
  status: number;
  data: T & ApiError;
  board: string | null;
  replayed: boolean;
}

/** Who is logged in, and which boards the page can fail over to. */
export const session = { csrf: '', role: '', user: '', token: '', bases: [location.origin], base: 0 };
export const currentBase = () => session.bases[session.base % session.bases.length] ?? location.origin;
export const canControl = () => session.role === 'operator' || session.role === 'admin';

export const RETRY_CODES: ReadonlySet<string> = new Set(EWS_RETRY_CODES);
/** A board whose password checks are all taken (a flood of logins) is not the only one. */
export const LOGIN_RETRY_CODES: ReadonlySet<string> = new Set([...EWS_RETRY_CODES, 'QUEUE_FULL']);

interface CallOptions {
  method?: string;
  body?: unknown;
  key?: string;
  deadlineMs?: number;
  retry?: ReadonlySet<string>;
}

export async function api<T = Record<string, unknown>>(path: string, { method = 'GET', body, key, deadlineMs = 15000, retry = RETRY_CODES }: CallOptions = {}): Promise<Answer<T>> {
  const until = Date.now() + deadlineMs;
  let attempt = 0;
  let last: ApiError = { error: { code: 'UNREACHABLE', message: 'no board of the cluster answers' } };
  for (;;) {
    const base = currentBase();
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && session.csrf) headers['x-csrf-token'] = session.csrf;
    if (key) headers['idempotency-key'] = key;
    if (session.token && base !== location.origin) headers.authorization = `Bearer ${session.token}`;
    try {
      // Each attempt may take as long as the server may (its request timeout is 10 s) when the
      // call's deadline allows: a slow command is not abandoned and re-sent.
      const perTry = Math.max(1000, Math.min(until - Date.now(), method === 'GET' ? 4000 : 11000));
      const init: RequestInit = { method, headers, credentials: 'include', signal: AbortSignal.timeout(perTry) };
      if (body !== undefined) init.body = JSON.stringify(body);
      const r = await fetch(base + path, init);
      const data = (await r.json().catch(() => ({}))) as T & ApiError;
      if (r.status >= 502 && r.status <= 503 && retry.has(data.error?.code ?? '')) {
        last = data;
        throw new Error('cluster busy');
      }
      reconnected();
      return { status: r.status, data, board: r.headers.get('x-ews-board'), replayed: r.headers.get('idempotent-replayed') === 'true' };
    } catch {
      if (Date.now() > until) return { status: 0, data: last as T & ApiError, board: null, replayed: false };
      session.base++;
      banner('Reconnecting to the cluster…');
      await sleep(Math.min(1000, 150 * ++attempt));
    }
  }
}

export const errorText = (a: Answer<unknown>) => a.data.error?.message ?? '';
