// The master's lean HTTP/1.1 intake reads request heads with this parser. It accepts only the
// plain, unambiguous case: GET, HEAD or POST of an origin-form target over HTTP/1.1, CRLF line
// ends, token header names, visible values, at most one Content-Length and no Transfer-Encoding,
// Expect or Upgrade. Anything else is 'other': the connection goes to Node's full HTTP server,
// which answers it (chunked bodies, 400, 431, ...). Because a request is either framed here by
// one Content-Length or never framed here at all, the two parsers cannot disagree about where a
// request ends (no smuggling between them). Pure: bytes in, a verdict out.

export interface RequestHead {
  readonly kind: 'request';
  readonly method: 'GET' | 'HEAD' | 'POST';
  readonly url: string;
  /** Names as received, values trimmed: [name, value, name, value, ...]. */
  readonly rawHeaders: string[];
  /** Lower-case names; a repeated header joined as Node joins it (cookie with "; ", others ", "). */
  readonly headers: Record<string, string>;
  /** Bytes of the head including the blank line. */
  readonly headBytes: number;
  readonly bodyBytes: number;
  /** The client asked to close after this answer. */
  readonly close: boolean;
}

export type HeadVerdict = RequestHead | { readonly kind: 'partial' } | { readonly kind: 'other'; readonly why: string };

const PARTIAL = { kind: 'partial' } as const;
const other = (why: string) => ({ kind: 'other', why }) as const;

const REQUEST_LINE = /^(GET|HEAD|POST) (\/[\x21-\x7e]*) HTTP\/1\.1$/;
const FIELD = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/;
// Field values: visible ASCII, space, tab and obs-text; never CR, LF or NUL.
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS = /^\d{1,15}$/;
// Headers the lean path leaves to the full server: they change framing or the connection.
const HANDOFF = new Set(['transfer-encoding', 'expect', 'upgrade', 'te', 'trailer']);
// A second copy of these is ambiguous (Node would drop it): left to the full server.
const SINGLE = new Set(['host', 'authorization', 'content-type', 'content-length', 'x-csrf-token', 'idempotency-key', 'x-ews-origin', 'x-ews-via', 'origin']);

/**
 * Reads one request head from the start of `buf`. `headerBytesMax` bounds the head (past it the
 * full server answers 431); `bodyBytesMax` the declared body (past it the full server answers 413).
 */
export function parseHead(buf: Buffer, headerBytesMax: number, bodyBytesMax: number): HeadVerdict {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return buf.length > headerBytesMax ? other('head too large') : PARTIAL;
  if (end + 4 > headerBytesMax) return other('head too large');
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const m = REQUEST_LINE.exec(lines[0]!);
  if (!m) return other('request line');
  const rawHeaders: string[] = [];
  const headers: Record<string, string> = {};
  let bodyBytes = 0;
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const f = FIELD.exec(lines[i]!);
    if (!f || !VALUE.test(f[2]!)) return other('header line');
    const name = f[1]!,
      value = f[2]!;
    const k = name.toLowerCase();
    if (HANDOFF.has(k)) return other(k);
    const had = headers[k];
    if (had !== undefined) {
      if (SINGLE.has(k)) return other(`repeated ${k}`);
      headers[k] = had + (k === 'cookie' ? '; ' : ', ') + value;
    } else headers[k] = value;
    rawHeaders.push(name, value);
    if (k === 'content-length') {
      if (!DIGITS.test(value)) return other('content-length');
      bodyBytes = Number(value);
      if (bodyBytes > bodyBytesMax) return other('body too large');
    } else if (k === 'connection') {
      for (const t of value.toLowerCase().split(',')) {
        const token = t.trim();
        if (token === 'close') close = true;
        else if (token === 'upgrade') return other('upgrade');
      }
    }
  }
  return { kind: 'request', method: m[1] as RequestHead['method'], url: m[2]!, rawHeaders, headers, headBytes: end + 4, bodyBytes, close };
}
