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

const DIGITS = /^\d{1,15}$/;
// Headers the lean path leaves to the full server: they change framing or the connection.
const HANDOFF = new Set(['transfer-encoding', 'expect', 'upgrade', 'te', 'trailer']);
// A second copy of these is ambiguous (Node would drop it): left to the full server.
const SINGLE = new Set(['host', 'authorization', 'content-type', 'content-length', 'x-csrf-token', 'idempotency-key', 'x-ews-origin', 'x-ews-via', 'origin']);
// A field name is one or more token characters (RFC 9110 tchar); a value is tab, visible ASCII,
// space or obs-text (never CR, LF, NUL or DEL). Tested on whole slices: the regular-expression
// engine's native code checks them, with no match object made, cold or warm.
const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TARGET = /^\/[\x21-\x7e]*$/;
const HEAD_END = Buffer.from('\r\n\r\n');
const VERSION = ' HTTP/1.1';

/** The method the request line starts with (and its space), or undefined. */
function methodOf(text: string): RequestHead['method'] | undefined {
  if (text.startsWith('GET ')) return 'GET';
  if (text.startsWith('POST ')) return 'POST';
  if (text.startsWith('HEAD ')) return 'HEAD';
  return undefined;
}

/** Space or tab (optional whitespace around a field value). */
const ows = (c: number): boolean => c === 0x20 || c === 0x09;

/**
 * Reads one request head from the start of `buf`. `headerBytesMax` bounds the head (past it the
 * full server answers 431); `bodyBytesMax` the declared body (past it the full server answers 413).
 * The request line is `(GET|HEAD|POST) /[\x21-\x7e]* HTTP/1.1`; a field line `name:OWS value OWS`.
 * Lines are found in place (no array of them), and the only loops in JavaScript trim the OWS.
 */
export function parseHead(buf: Buffer, headerBytesMax: number, bodyBytesMax: number): HeadVerdict {
  const end = buf.indexOf(HEAD_END);
  if (end < 0) return buf.length > headerBytesMax ? other('head too large') : PARTIAL;
  if (end + 4 > headerBytesMax) return other('head too large');
  const text = buf.toString('latin1', 0, end);
  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = end;
  const method = methodOf(text);
  const from = method ? method.length + 1 : 0;
  const at = eol - VERSION.length;
  if (!method || at < from || !text.startsWith(VERSION, at)) return other('request line');
  const url = text.slice(from, at);
  if (!TARGET.test(url)) return other('request line');
  const rawHeaders: string[] = [];
  const headers: Record<string, string> = {};
  let bodyBytes = 0;
  let close = false;
  for (let line = eol + 2; line < end; line = eol + 2) {
    eol = text.indexOf('\r\n', line);
    if (eol < 0) eol = end;
    const colon = text.indexOf(':', line);
    if (colon < 0 || colon >= eol) return other('header line');
    let first = colon + 1;
    let past = eol;
    while (first < past && ows(text.charCodeAt(first))) first++;
    while (past > first && ows(text.charCodeAt(past - 1))) past--;
    const name = text.slice(line, colon);
    const value = text.slice(first, past);
    if (!NAME.test(name) || !VALUE.test(value)) return other('header line');
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
  return { kind: 'request', method, url, rawHeaders, headers, headBytes: end + 4, bodyBytes, close };
}
