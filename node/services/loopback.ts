// A request from this board to its own HTTP port: how schedules and MQTT commands enter the
// master's queue and dispatch exactly as a client's request would.
import type http from 'node:http';
import type { BoardConfig } from '../../shared/config.ts';
import { boardAgent, type TlsMaterial } from '../tls-material.ts';

export interface LoopbackAnswer {
  status: number;
  body: string;
}

/** A keep-alive client of this board's own port (HTTPS when the board speaks it). */
export class Loopback {
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  constructor(
    private readonly self: BoardConfig,
    tls: TlsMaterial | undefined,
    maxSockets: number,
  ) {
    ({ agent: this.agent, request: this.request } = boardAgent(tls, { keepAlive: true, maxSockets }));
  }

  post(path: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<LoopbackAnswer> {
    return postToSelf(this.self, this.agent, this.request, path, body, headers, timeoutMs);
  }

  close(): void {
    this.agent.destroy();
  }
}

function postToSelf(self: BoardConfig, agent: http.Agent, request: typeof http.request, path: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<LoopbackAnswer> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: self.address,
        port: self.httpPort,
        method: 'POST',
        path,
        agent,
        timeout: timeoutMs,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', () => resolve({ status: 0, body: '' }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, body: JSON.stringify({ error: { code: 'BOARD_FAILED', message: err.message } }) }));
    req.end(body);
  });
}
