// Whose address a request is classified by: X-Forwarded-For counts only from a cluster board (the
// hop that sets it); from anyone else it is ignored, so a client cannot pick its own class.
// Loopback gives this machine 127.0.0.0/8: a client at 127.0.0.9 is not a board (they are at 127.0.0.1).

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { converged, makeCluster, type TestCluster } from './harness.ts';

const classOf = (url: string, from: string, xff: string) =>
  new Promise<string>((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: u.hostname, port: u.port, path: '/cgi-bin/echo?ms=0', localAddress: from, headers: { 'x-forwarded-for': xff }, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(String(res.headers['x-ews-class'])) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });

describe('the client address behind X-Forwarded-For', () => {
  let c: TestCluster;
  before(async () => {
    c = await makeCluster(2, (cfg) => {
      cfg.classes = [
        { name: 'site', priority: 0, match: [{ client: '10.9.0.0/24' }] },
        { name: 'control', priority: 0, match: [{ pathPrefix: '/cgi-bin/' }] },
        { name: 'browse', priority: 1, match: [{ pathPrefix: '/' }] },
      ];
    });
    await converged(c);
  });
  after(() => c.stop());

  test('from a board address it is the client: the request is classified by it', async () => {
    assert.equal(await classOf(c.boards[0]!.url, '127.0.0.1', '10.9.0.5'), 'site');
  });

  test('from anyone else it is ignored, at the master and through a node', async () => {
    assert.equal(await classOf(c.boards[0]!.url, '127.0.0.9', '10.9.0.5'), 'control', 'straight to the master');
    assert.equal(await classOf(c.boards[1]!.url, '127.0.0.9', '10.9.0.5'), 'control', 'through a node, which sets it to its own peer');
  });
});
