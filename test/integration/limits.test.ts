// Limits at the edge: oversized bodies and headers, slow clients; the board stays up.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { converged, makeCluster, metric, rawRequest, type TestCluster } from './harness.ts';

describe('limits', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(2, (cfg) => {
      cfg.limits = { bodyBytesMax: 1024, headerBytesMax: 2048, headersTimeoutMs: 500, answerBytesMax: 100_000 };
      cfg.benchmarkHandlers = true;
    });
    await converged(c);
  });
  after(() => c.stop());

  test('a body over bodyBytesMax: 413 with the coded error, on the master and on a node', async () => {
    for (const b of c.boards) {
      const r = await fetch(`${b.url}/cgi-bin/echo`, { method: 'POST', body: 'x'.repeat(1025) });
      assert.equal(r.status, 413);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'BODY_TOO_LARGE');
    }
    const ok = await fetch(`${c.boards[0]!.url}/cgi-bin/echo`, { method: 'POST', body: 'x'.repeat(1024) });
    assert.equal(ok.status, 200, 'exactly the limit is accepted');
    assert.equal(((await ok.json()) as { bytes: number }).bytes, 1024);
  });

  test('an answer larger than a request may be crosses the dispatch link whole; one over answerBytesMax is a 502, and the link stays up', async () => {
    const master = c.boards[0]!.url;
    const big = await fetch(`${master}/cgi-bin/echo?bytes=60000`);
    assert.equal(big.status, 200);
    assert.equal(big.headers.get('x-ews-board'), 'b2', 'run on the other board, over the link');
    assert.ok((await big.text()).length >= 60_000);
    const over = await fetch(`${master}/cgi-bin/echo?bytes=200000`);
    assert.equal(over.status, 502);
    assert.equal(((await over.json()) as { error: { code: string } }).error.code, 'ANSWER_TOO_LARGE');
    assert.equal(await metric(master, 'ews_link_dropped_total'), 0, 'no frame refused, no link closed');
  });

  test('headers over headerBytesMax: 431', async () => {
    const res = await rawRequest(c.boards[0]!.httpPort, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`);
    assert.match(res, /^HTTP\/1\.1 431/);
  });

  test('a client that never finishes its headers is cut off after headersTimeoutMs (slowloris); the board stays up', async () => {
    const t0 = Date.now();
    const res = await rawRequest(c.boards[0]!.httpPort, 'GET / HTTP/1.1\r\nHost: x\r\n');
    assert.ok(Date.now() - t0 < 10_000);
    assert.match(res, /^HTTP\/1\.1 408|^$/);
    assert.equal((await fetch(`${c.boards[0]!.url}/healthz`)).status, 200);
  });

  test('malformed HTTP gets 400 and a JSON error', async () => {
    const res = await rawRequest(c.boards[1]!.httpPort, 'BLAH\r\n\r\n', { endAfterWrite: true });
    assert.match(res, /^HTTP\/1\.1 400/);
    assert.match(res, /"code":"BAD_REQUEST"/);
  });

  test('bad input to the built-in CGI: 400 with a message; unknown page: 404', async () => {
    const r = await fetch(`${c.boards[0]!.url}/cgi-bin/echo?ms=abc`);
    assert.equal(r.status, 400);
    assert.match(((await r.json()) as { error: { message: string } }).error.message, /ms must be/);
    assert.equal((await fetch(`${c.boards[1]!.url}/no/such/page`)).status, 404);
  });
});
