// The dispatch link's write batch at its bound: frames written in one turn that together pass the
// frame bound leave as more than one batch, each within the bound, none lost, over a real socket.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { test } from 'node:test';
import { FrameBatch } from '../../node/http/dispatch-link.ts';
import { FrameCodec, FrameSplitter } from '../../shared/dispatch-frame.ts';

test('a turn of frames past the frame bound leaves as several batches, each within the bound', async () => {
  const bound = 4096;
  const codec = new FrameCodec(Buffer.alloc(32, 3), bound);
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  const accepted = once(server, 'connection');
  const client = net.connect(port, '127.0.0.1');
  await once(client, 'connect');
  const [peer] = (await accepted) as [net.Socket];
  const splitter = new FrameSplitter(bound);
  const ids: number[] = [];
  let batches = 0;
  const all = new Promise<void>((resolve, reject) => {
    peer.on('data', (chunk: Buffer) => {
      const raws = splitter.push(chunk);
      if (raws === 'oversized') return reject(new Error('a batch over the bound'));
      for (const raw of raws) {
        const d = codec.decode(raw);
        if (typeof d === 'string') return reject(new Error(d));
        batches++;
        for (const f of d.type === 'batch' ? d.frames : [d]) ids.push(f.id);
      }
      if (ids.length === 40) resolve();
    });
  });
  const batch = new FrameBatch(client, codec);
  // 40 answers of 300 bytes each (about 12 KB) in one turn, against a 4 KB bound.
  for (let id = 1; id <= 40; id++) batch.add(codec.answer({ id, load: 0, status: 200, refused: false, head: Buffer.alloc(0), body: Buffer.alloc(300, 1) }, false));
  await all;
  assert.deepEqual(
    ids,
    Array.from({ length: 40 }, (_, i) => i + 1),
    'every frame, in order',
  );
  assert.ok(batches >= 3, `split into ${batches} batches`);
  client.destroy();
  peer.destroy();
  server.close();
});
