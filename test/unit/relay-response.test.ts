// relayResponse into a gathered answer (the step-down hand-off of a lean exchange to the new
// master): the body is bounded by limits.answerBytesMax, over it the client gets 502
// ANSWER_TOO_LARGE. A real upstream on loopback.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { CapturedAnswer } from '../../node/http/answer.ts';
import { relayResponse } from '../../node/http/http-io.ts';

async function relayed(bodyBytes: number, bytesMax: number): Promise<{ status: number; body: Buffer }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(Buffer.alloc(bodyBytes, 7));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/' }, (up) => {
        relayResponse(up, new CapturedAnswer((status, _h, body) => resolve({ status, body })), bytesMax);
      });
      req.on('error', reject);
    });
  } finally {
    server.close();
    server.closeAllConnections();
  }
}

test('relayResponse: an answer within answerBytesMax is relayed whole', async () => {
  const r = await relayed(100_000, 100_000);
  assert.equal(r.status, 200);
  assert.equal(r.body.length, 100_000);
});

test('relayResponse: an answer over answerBytesMax gets 502 ANSWER_TOO_LARGE, not gathered', async () => {
  const r = await relayed(300_000, 64 * 1024);
  assert.equal(r.status, 502);
  assert.match(r.body.toString(), /ANSWER_TOO_LARGE/);
});
