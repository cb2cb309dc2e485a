import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type HeadVerdict, parseHead } from '../../shared/http-head.ts';

const HEAD_MAX = 1024,
  BODY_MAX = 100;
const parse = (text: string) => parseHead(Buffer.from(text, 'latin1'), HEAD_MAX, BODY_MAX);

test('a plain request: method, target, headers as Node joins them, its body length and where the head ends', () => {
  const v = parse('POST /cgi-bin/devices/pump1/start?x=1 HTTP/1.1\r\nHost: b1\r\nCookie: a=1\r\ncookie: b=2\r\nAccept: x\r\nAccept: y\r\nContent-Length: 11\r\n\r\n{"value":1}');
  assert.equal(v.kind, 'request');
  if (v.kind !== 'request') return;
  assert.equal(v.method, 'POST');
  assert.equal(v.url, '/cgi-bin/devices/pump1/start?x=1');
  assert.equal(v.headers.host, 'b1');
  assert.equal(v.headers.cookie, 'a=1; b=2');
  assert.equal(v.headers.accept, 'x, y');
  assert.deepEqual(v.rawHeaders.slice(0, 4), ['Host', 'b1', 'Cookie', 'a=1']);
  assert.equal(v.bodyBytes, 11);
  assert.equal(
    v.headBytes,
    v.headBytes > 0 ? Buffer.byteLength('POST /cgi-bin/devices/pump1/start?x=1 HTTP/1.1\r\nHost: b1\r\nCookie: a=1\r\ncookie: b=2\r\nAccept: x\r\nAccept: y\r\nContent-Length: 11\r\n\r\n') : -1,
  );
  assert.equal(v.close, false);
});

test('a head still arriving is partial; one past the bound goes to the full server (431 there)', () => {
  assert.equal(parse('GET / HTTP/1.1\r\nHost: b1\r\n').kind, 'partial');
  assert.equal(parse(`GET / HTTP/1.1\r\nX: ${'a'.repeat(HEAD_MAX)}`).kind, 'other');
  assert.equal(parse(`GET / HTTP/1.1\r\nX: ${'a'.repeat(HEAD_MAX)}\r\n\r\n`).kind, 'other');
});

test('Connection: close is honoured; an upgrade is not for the lean path', () => {
  const v = parse('GET / HTTP/1.1\r\nHost: b1\r\nConnection: keep-alive, Close\r\n\r\n');
  assert.ok(v.kind === 'request' && v.close);
  assert.equal(parse('GET / HTTP/1.1\r\nHost: b1\r\nConnection: Upgrade\r\n\r\n').kind, 'other');
});

test('anything ambiguous or unusual goes to the full server, never framed here (no smuggling between the two)', () => {
  const others = [
    'POST / HTTP/1.1\r\nHost: b1\r\nTransfer-Encoding: chunked\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: b1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: b1\r\nContent-Length: +5\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: b1\r\nContent-Length: 5 5\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: b1\r\nContent-Length: 101\r\n\r\n',
    'POST / HTTP/1.1\r\nHost: b1\r\nExpect: 100-continue\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: b1\r\nHost: evil\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: b1\r\nX: a\nContent-Length: 5\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: b1\r\nX: a\rb\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: b1\r\n folded\r\n\r\n',
    'GET / HTTP/1.1\r\nHost : b1\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: b1\r\nX: a\x00b\r\n\r\n',
    'GET / HTTP/1.0\r\nHost: b1\r\n\r\n',
    'PUT / HTTP/1.1\r\nHost: b1\r\n\r\n',
    'OPTIONS / HTTP/1.1\r\nHost: b1\r\n\r\n',
    'GET http://b1/ HTTP/1.1\r\nHost: b1\r\n\r\n',
    'GET  / HTTP/1.1\r\nHost: b1\r\n\r\n',
    'get / HTTP/1.1\r\nHost: b1\r\n\r\n',
  ];
  for (const t of others) assert.equal(parse(t).kind, 'other', JSON.stringify(t));
});

/** The parser as it was written first, in regular expressions: the scan must give the same verdict on every head. */
function reference(buf: Buffer, headerBytesMax: number, bodyBytesMax: number): HeadVerdict {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return buf.length > headerBytesMax ? { kind: 'other', why: 'head too large' } : { kind: 'partial' };
  if (end + 4 > headerBytesMax) return { kind: 'other', why: 'head too large' };
  const lines = buf.toString('latin1', 0, end).split('\r\n');
  const m = /^(GET|HEAD|POST) (\/[\x21-\x7e]*) HTTP\/1\.1$/.exec(lines[0]!);
  if (!m) return { kind: 'other', why: 'request line' };
  const rawHeaders: string[] = [];
  const headers: Record<string, string> = {};
  let bodyBytes = 0;
  let close = false;
  for (let i = 1; i < lines.length; i++) {
    const f = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/.exec(lines[i]!);
    if (!f || !/^[\t\x20-\x7e\x80-\xff]*$/.test(f[2]!)) return { kind: 'other', why: 'header line' };
    const name = f[1]!;
    const value = f[2]!;
    const k = name.toLowerCase();
    if (['transfer-encoding', 'expect', 'upgrade', 'te', 'trailer'].includes(k)) return { kind: 'other', why: k };
    const had = headers[k];
    if (had !== undefined) {
      if (['host', 'authorization', 'content-type', 'content-length', 'x-csrf-token', 'idempotency-key', 'x-ews-origin', 'x-ews-via', 'origin'].includes(k))
        return { kind: 'other', why: `repeated ${k}` };
      headers[k] = had + (k === 'cookie' ? '; ' : ', ') + value;
    } else headers[k] = value;
    rawHeaders.push(name, value);
    if (k === 'content-length') {
      if (!/^\d{1,15}$/.test(value)) return { kind: 'other', why: 'content-length' };
      bodyBytes = Number(value);
      if (bodyBytes > bodyBytesMax) return { kind: 'other', why: 'body too large' };
    } else if (k === 'connection') {
      for (const t of value.toLowerCase().split(',')) {
        const token = t.trim();
        if (token === 'close') close = true;
        else if (token === 'upgrade') return { kind: 'other', why: 'upgrade' };
      }
    }
  }
  return { kind: 'request', method: m[1] as 'GET', url: m[2]!, rawHeaders, headers, headBytes: end + 4, bodyBytes, close };
}

test('the scan and the regular-expression parser agree on 100 000 generated heads, valid and broken', () => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
  // Characters that sit at the edges of what each part allows.
  const edgy = ['a', 'Z', '0', '-', '/', '?', '=', ' ', '\t', ':', ';', ',', '\r', '\n', '\0', '\x7f', '\x80', '\xff', '\x1f', '\x21', '\x7e', '"', '(', '@'];
  const word = (n: number, pool: readonly string[]) => Array.from({ length: rand(n) }, () => pick(pool)).join('');
  const names = ['Host', 'host', 'Content-Length', 'Connection', 'Cookie', 'Accept', 'X-Y', 'Transfer-Encoding', 'Expect', 'Origin', 'TE', ''];
  const kinds: Record<string, number> = {};
  for (let n = 0; n < 100_000; n++) {
    const line =
      rand(8) === 0
        ? `${pick(['GET', 'HEAD', 'POST', 'PUT', 'get', 'GET '])} ${pick(['/', '', 'http://x/'])}${word(6, edgy)} ${pick(['HTTP/1.1', 'HTTP/1.0', 'HTTP/1.1 ', 'HTTP/1.11'])}`
        : `${pick(['GET', 'HEAD', 'POST'])} /${word(8, ['a', '?', '=', '%', '~', '\x7e', '\x21'])} HTTP/1.1`;
    const fields = Array.from({ length: rand(5) }, () => {
      const name = rand(6) === 0 ? word(4, edgy) : pick(names);
      const value = rand(4) === 0 ? word(6, edgy) : pick(['b1', ' 5 ', '12', '101', '+5', 'close', 'keep-alive, Close', 'Upgrade', '', '\t x \t', 'a=1', 'x'.repeat(90)]);
      return `${name}${rand(10) === 0 ? ' ' : ''}${rand(12) === 0 ? '' : ':'}${value}`;
    });
    const text = `${[line, ...fields].join(rand(20) === 0 ? '\n' : '\r\n')}\r\n\r\n${rand(3) === 0 ? 'body' : ''}`;
    const buf = Buffer.from(text.slice(0, rand(10) === 0 ? rand(text.length + 1) : text.length), 'latin1');
    const want = reference(buf, 200, 100);
    assert.deepEqual(parseHead(buf, 200, 100), want, JSON.stringify(text));
    const k = want.kind === 'other' ? want.why : want.kind;
    kinds[k] = (kinds[k] ?? 0) + 1;
  }
  // The generator reaches every verdict (each count could be 0 if it did not).
  for (const k of ['request', 'partial', 'request line', 'header line', 'content-length', 'body too large', 'upgrade', 'transfer-encoding', 'repeated host', 'head too large'])
    assert.ok((kinds[k] ?? 0) > 0, `${k}: ${JSON.stringify(kinds)}`);
});
