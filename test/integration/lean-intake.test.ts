// The master's lean intake (node/http/lean-connection.ts) on a real board: keep-alive and
// pipelined requests answered in order, Connection: close, and the hand-off to Node's HTTP server
// mid-connection for what the lean path does not take (a chunked body, the board's own routes).
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { converged, makeCluster, metric, rawRequest, type TestCluster, waitFor } from './harness.ts';

/** Write `text` on one connection; resolve with everything read once `count` answers (by status line) are in. */
function exchange(port: number, text: string, count: number, timeoutMs = 10_000): Promise<{ out: string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    const closed = new Promise<void>((r) => s.on('close', () => r()));
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`timed out with: ${out}`));
    }, timeoutMs);
    s.on('data', (d) => {
      out += d.toString('latin1');
      const answers = out.match(/HTTP\/1\.1 \d{3}/g)?.length ?? 0;
      // Wait for the last answer's body too: its declared length is all there.
      const last = out.lastIndexOf('HTTP/1.1 ');
      const head = out.indexOf('\r\n\r\n', last);
      const len = Number(/content-length: (\d+)/i.exec(out.slice(last, head))?.[1] ?? 0);
      if (answers >= count && head >= 0 && out.length >= head + 4 + len) {
        clearTimeout(timer);
        resolve({ out, closed });
        setTimeout(() => s.end(), 0);
      }
    });
    s.on('error', reject);
    s.write(text);
  });
}

describe('lean intake', () => {
  let c: TestCluster;
  let port: number;
  before(async () => {
    c = await makeCluster(2, (cfg) => {
      cfg.benchmarkHandlers = true;
      cfg.limits = { headersTimeoutMs: 500, keepAliveTimeoutMs: 1000 };
    });
    await converged(c);
    port = c.boards[0]!.httpPort;
  });
  after(() => c.stop());

  test('pipelined requests on one connection are answered in order, each whole', async () => {
    // Sizes mark the answers: a slow large one first, then a quick small one, then a middle one.
    const req = (ms: number, bytes: number) => `GET /cgi-bin/echo?ms=${ms}&bytes=${bytes} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    const { out } = await exchange(port, req(30, 900) + req(0, 100) + req(10, 500), 3);
    const sizes = [...out.matchAll(/content-length: (\d+)/g)].map((m) => Number(m[1]));
    assert.equal(sizes.length, 3);
    assert.ok(sizes[0]! > sizes[2]! && sizes[2]! > sizes[1]!, `answers out of order: ${sizes.join(', ')}`);
    assert.equal(out.match(/HTTP\/1\.1 200 OK\r\n/g)?.length, 3);
    assert.match(out, /x-content-type-options: nosniff/, 'security headers on lean answers');
    assert.match(out, /connection: keep-alive/);
  });

  test('a POST body framed by Content-Length reaches the CGI; HEAD gets headers only', async () => {
    const body = 'x'.repeat(300);
    const { out } = await exchange(port, `POST /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\n\r\n${body}`, 1);
    assert.match(out, /"bytes":300/);
    const head = await rawRequest(port, 'HEAD /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.equal(head.slice(head.indexOf('\r\n\r\n') + 4), '', 'no body after a HEAD');
  });

  test('Connection: close: the answer, then the board closes the connection', async () => {
    const { out, closed } = await exchange(port, 'GET /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n', 1);
    assert.match(out, /connection: close/);
    await closed;
  });

  test('mid-connection hand-off: after a lean request, a chunked POST and /healthz go to the full server on the same connection', async () => {
    const text =
      'GET /cgi-bin/echo?ms=5 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' +
      'POST /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' +
      'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const { out } = await exchange(port, text, 3);
    assert.equal(out.match(/HTTP\/1\.1 200 OK\r\n/g)?.length, 3, out);
    assert.match(out, /"bytes":5/, 'the chunked body was decoded by the full server');
    assert.match(out, /"role":"master"/);
  });

  test('a request whose head never completes gets 408 after headersTimeoutMs; a malformed one 400', async () => {
    const slow = await rawRequest(port, 'GET /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    assert.match(slow, /^HTTP\/1\.1 408/);
    const bad = await rawRequest(port, 'GET /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', { endAfterWrite: true });
    assert.match(bad, /^HTTP\/1\.1 400/);
  });

  test('a client that pipelines without reading its answers: the board stops taking its requests until it reads, then answers them all', async () => {
    const N = 300; // 300 answers of 60 kB: 18 MB, more than the socket buffers hold
    const served = () => metric(c.boards[0]!.url, 'ews_requests_total', { outcome: 'served' });
    const before = await served();
    const s = net.connect(port, '127.0.0.1');
    s.pause(); // read nothing yet
    s.on('error', () => {});
    s.write('GET /cgi-bin/echo?bytes=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(N));
    // Served until the buffers are full, then no more: the count stops moving.
    let last = -1;
    const stalled = await waitFor(
      'the board to stop taking requests',
      async () => {
        const n = (await served()) - before;
        const same = n === last;
        last = n;
        return same && n > 0 ? n : undefined;
      },
      15_000,
      300,
    );
    assert.ok(stalled < N / 2, `served ${stalled} of ${N} to a client that read nothing`);
    // Reading resumes the pipeline: every answer arrives.
    let answers = 0,
      tail = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${answers} answers`)), 30_000);
      s.on('data', (d: Buffer) => {
        const text = tail + d.toString('latin1');
        answers += text.split('HTTP/1.1 200 OK\r\n').length - 1;
        tail = text.slice(-20);
        if (answers >= N) {
          clearTimeout(timer);
          resolve();
        }
      });
      s.resume();
    });
    s.destroy();
    assert.equal(answers, N);
  });

  test('a connection idle after its answer is closed by the board after keepAliveTimeoutMs, not before', async () => {
    const s = net.connect(port, '127.0.0.1');
    let answeredAt = 0;
    const closedAfterMs = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the board kept the idle connection open')), 10_000);
      s.on('data', (d) => {
        if (d.toString('latin1').startsWith('HTTP/1.1 200')) answeredAt = performance.now();
      });
      s.on('close', () => {
        clearTimeout(timer);
        resolve(performance.now() - answeredAt);
      });
      s.on('error', reject);
      s.write('GET /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    });
    assert.ok(answeredAt > 0, 'answered before the close');
    assert.ok(closedAfterMs >= 900, `closed ${closedAfterMs.toFixed(0)} ms after the answer`);
  });

  test('a body that does not arrive in time: 408, and the board serves on', async () => {
    const slow = await rawRequest(port, 'POST /cgi-bin/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\nabc');
    assert.match(slow, /^HTTP\/1\.1 408/);
    assert.equal((await fetch(`${c.boards[0]!.url}/cgi-bin/echo`)).status, 200);
  });

  test('CPU-bound overflow on the master (spill, its own jobs paced): all are answered, both boards serve, and every count returns to 0 though some clients left', async () => {
    const burn = (signal?: AbortSignal) => fetch(`${c.boards[0]!.url}/cgi-bin/burn?ms=5`, { signal: signal ?? AbortSignal.timeout(20_000) });
    // 48 at once: b2 holds its 16, the master takes overflow while its CPU has room; 8 clients leave early.
    const leave = new AbortController();
    const gone = Array.from({ length: 8 }, () => burn(leave.signal).catch(() => 'aborted' as const));
    const served = Array.from({ length: 40 }, () => burn());
    setTimeout(() => leave.abort(), 20);
    const rs = await Promise.all(served);
    const boards = new Set(rs.map((r) => r.headers.get('x-ews-board')));
    for (const r of rs) assert.equal(r.status, 200, await r.text());
    assert.deepEqual([...boards].sort(), ['b1', 'b2'], 'both boards served');
    assert.ok((await Promise.all(gone)).includes('aborted'));
    await waitFor('linknum back to 0', async () => ((await (await fetch(`${c.boards[1]!.url}/api/cluster`)).json()) as { boards: Array<{ linknum: number }> }).boards.every((b) => b.linknum === 0));
  });
});
