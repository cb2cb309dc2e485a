// One request from this board to another board's port (HTTPS when the cluster speaks it): what a
// rejoining board's gap fill and a restore passed on use. A fresh connection each time (these are
// rare), bounded in time and in the bytes of the answer.
import type { BoardConfig } from '../../shared/config.ts';
import { boardAgent, type TlsMaterial } from '../tls-material.ts';

export interface BoardAnswer {
  status: number;
  body: Buffer;
}

export function requestBoard(
  to: BoardConfig,
  tls: TlsMaterial | undefined,
  r: { method: string; path: string; headers: Record<string, string>; body?: Buffer; timeoutMs: number; answerBytesMax: number },
): Promise<BoardAnswer> {
  const { agent, request } = boardAgent(tls, {});
  return new Promise((resolve, reject) => {
    const req = request({ host: to.address, port: to.httpPort, method: r.method, path: r.path, agent, timeout: r.timeoutMs, headers: r.headers }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes > r.answerBytesMax) req.destroy(new Error(`answer over ${r.answerBytesMax} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        agent.destroy();
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => {
      agent.destroy();
      reject(err);
    });
    req.end(r.body);
  });
}
