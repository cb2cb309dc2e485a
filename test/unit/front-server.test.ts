// A front server that closes while its process goes on (a node's rehearsal opens and closes one
// every few minutes, node/http/rehearsal.ts) leaves nothing running behind it.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { FrontServer } from '../../node/http/front-server.ts';
import { silentLogger } from '../../node/log.ts';
import { parseConfig } from '../../shared/config.ts';

const limits = parseConfig({ cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' }, boards: [{ id: 'a', address: '127.0.0.1' }], auth: { disabled: true } }).limits;

test("close stops Node's timeout sweep and frees the port; a listen on port 0 reports the port it got", async () => {
  const f = new FrontServer(limits, { request: async (_req, res) => void res.end('ok'), link: () => {}, accept: () => true }, silentLogger);
  await f.listen(0, '127.0.0.1');
  const port = f.port();
  assert.ok(port > 0);
  const answer = await fetch(`http://127.0.0.1:${port}/`);
  assert.equal(await answer.text(), 'ok');
  await f.close();
  // Node's HTTP server keeps its sweep under this symbol; it runs until the server's close.
  const server = (f as unknown as { http: Record<symbol, { _destroyed?: boolean } | undefined> }).http;
  const sweep = Object.getOwnPropertySymbols(server).find((s) => s.description === 'http.server.connectionsCheckingInterval');
  assert.ok(sweep, "Node's HTTP server no longer keeps its sweep under this name: look again at what close leaves");
  assert.equal(server[sweep]?._destroyed, true, 'the sweep still runs after close');
  const refused = await new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => (s.destroy(), resolve(false)));
    s.on('error', () => resolve(true));
  });
  assert.ok(refused, 'the port is still open');
});
