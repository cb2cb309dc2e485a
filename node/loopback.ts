// A request from this board to its own HTTP port: how schedules and MQTT commands enter the
// master's queue and dispatch exactly as a client's request would.
import http from 'node:http';
import type { BoardConfig } from '../shared/config.ts';

export interface LoopbackAnswer { status: number; body: string }

export function postToSelf(self: BoardConfig, agent: http.Agent, path: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<LoopbackAnswer> {
  return new Promise((resolve) => {
    const req = http.request({ host: self.address, port: self.httpPort, method: 'POST', path, agent, timeout: timeoutMs, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, body: JSON.stringify({ error: { code: 'BOARD_FAILED', message: err.message } }) }));
    req.end(body);
  });
}
