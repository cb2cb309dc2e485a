// A board that was away asks the master for what it missed (GET /api/sync?since=ms): the audit
// entries and the history samples since then, all of them, not only the last few. Bounded in
// time and in bytes; a failure is retried at the next master.
import type { BoardConfig } from '../../shared/config.ts';
import { boardAgent, type TlsMaterial } from '../tls-material.ts';

/** The most a sync answer may hold (a full history of many points is a few MB). */
const SYNC_BYTES_MAX = 32 << 20;

export function fetchSync(master: BoardConfig, tls: TlsMaterial | undefined, sinceMs: number, headers: Record<string, string>, timeoutMs: number): Promise<unknown> {
  const { agent, request } = boardAgent(tls, {});
  return new Promise((resolve, reject) => {
    const req = request({ host: master.address, port: master.httpPort, path: `/api/sync?since=${Math.max(0, Math.floor(sinceMs))}`, agent, timeout: timeoutMs, headers }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes > SYNC_BYTES_MAX) req.destroy(new Error(`answer over ${SYNC_BYTES_MAX} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        agent.destroy();
        if (res.statusCode !== 200) return reject(new Error(`${master.id} answered ${res.statusCode}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${master.id} answered garbage`));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => {
      agent.destroy();
      reject(err);
    });
    req.end();
  });
}
