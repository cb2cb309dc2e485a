// A streamed upload (the release bundle's): written to disk as it arrives, refused with 413 the
// moment it passes its bound, declared or not, with the partial file removed and the answer delivered.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { receiveFile } from '../../node/http/http-io.ts';
import { EwsError } from '../../shared/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'ews-receive-'));
const file = join(dir, 'upload.bin');
const MAX = 64 * 1024;
let server: http.Server;
let url = '';

before(async () => {
  server = http.createServer((req, res) => {
    receiveFile(req, file, MAX).then(
      (n) => res.end(JSON.stringify({ n })),
      (e: unknown) => {
        res.statusCode = e instanceof EwsError ? e.status : 500;
        res.end(JSON.stringify({ code: (e as EwsError).code }));
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** POST `chunks`, chunked (no Content-Length) unless `length` is given. */
function post(chunks: Buffer[], length?: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: length === undefined ? {} : { 'content-length': String(length) } }, (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

test('an upload within the bound is on disk whole, at the bound too', async () => {
  const data = Buffer.alloc(MAX, 7);
  data[0] = 1;
  const r = await post([data.subarray(0, 1000), data.subarray(1000)]);
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(r.body), { n: MAX });
  assert.ok(readFileSync(file).equals(data));
});

test('one byte over, chunked: 413 answered, the partial file gone', async () => {
  rmSync(file, { force: true });
  const r = await post([Buffer.alloc(MAX), Buffer.alloc(1)]);
  assert.equal(r.status, 413);
  assert.equal(JSON.parse(r.body).code, 'BODY_TOO_LARGE');
  assert.equal(existsSync(file), false);
});

test('declared over the bound: refused before a byte is stored', async () => {
  rmSync(file, { force: true });
  const r = await post([Buffer.alloc(MAX + 1)], MAX + 1);
  assert.equal(r.status, 413);
  assert.equal(existsSync(file), false);
});
