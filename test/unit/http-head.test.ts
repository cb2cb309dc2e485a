import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseHead } from '../../shared/http-head.ts';

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
