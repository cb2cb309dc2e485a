// A client reached a board that is not the master: the request goes to the master once (it is
// never bounced again), over HTTP keep-alive, and its answer comes back the same way.
import type http from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import { boardAgent, type TlsMaterial } from '../tls-material.ts';
import { endToEndHeaders, relayResponse, sendError } from './http-io.ts';
import type { ClientAnswer, ClientRequest } from './lean-exchange.ts';

export class MasterRelay {
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  /** Relayed requests not answered yet, and who waits for there to be none. */
  private inFlight = 0;
  private idle: (() => void) | undefined;
  constructor(
    private readonly cfg: Config,
    private readonly self: BoardConfig,
    tls: TlsMaterial | undefined,
  ) {
    ({ agent: this.agent, request: this.request } = boardAgent(tls, { keepAlive: true, maxSockets: cfg.limits.connectionsMax, timeout: cfg.limits.keepAliveTimeoutMs }));
  }

  relay(master: number, req: ClientRequest, res: ClientAnswer, body: Buffer): void {
    const m = this.cfg.boards[master]!;
    const headers: Record<string, string | string[]> = endToEndHeaders(req.headers);
    // The master checks origins against the Host the browser used.
    if (req.headers.host) headers.host = req.headers.host;
    headers['x-ews-via'] = this.self.id;
    headers['x-forwarded-for'] = req.socket.remoteAddress ?? '';
    headers['content-length'] = String(body.length);
    const up = this.request({ host: m.address, port: m.httpPort, method: req.method, path: req.url, headers, agent: this.agent, timeout: this.cfg.limits.requestTimeoutMs });
    this.inFlight++;
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
      if (--this.inFlight === 0) this.idle?.();
    });
    up.on('response', (ur) => relayResponse(ur, res, this.cfg.limits.answerBytesMax));
    up.on('timeout', () => up.destroy(new EwsError('DISPATCH_TIMEOUT', `master ${m.id} did not answer in time`)));
    up.on('error', (err) => sendError(res, err instanceof EwsError ? err : new EwsError('NO_MASTER', `master ${m.id} unreachable (${(err as NodeJS.ErrnoException).code ?? err.message})`)));
    up.end(body);
  }

  /**
   * Once no relayed request is waiting for the master's answer, or after `ms` (one waiter: the
   * board's close). After an upgrade's handover these are the last requests the old address took.
   */
  settled(ms: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.idle = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Drop the keep-alive connections (a pulled cable, shutdown). */
  close(): void {
    this.agent.destroy();
  }
}
