// Server-Sent Events for the UI: a bounded set of listeners and a change-driven publisher.
import type { ServerResponse } from 'node:http';
import { EwsError } from '../shared/errors.ts';

export class EventsHub {
  private readonly clients = new Set<ServerResponse>();
  private readonly keepAlive: NodeJS.Timeout;
  constructor(private readonly max: number) {
    this.keepAlive = setInterval(() => this.write(': keep-alive\n\n'), 15_000).unref();
  }
  get size(): number { return this.clients.size; }

  add(res: ServerResponse, initial: Array<[string, unknown]>): void {
    if (this.clients.size >= this.max) throw new EwsError('QUEUE_FULL', `at most ${this.max} event listeners`, { retryAfterS: 5 });
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
    for (const [e, d] of initial) res.write(`event: ${e}\ndata: ${JSON.stringify(d)}\n\n`);
  }
  publish(event: string, data: unknown): void {
    if (this.clients.size > 0) this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  private write(s: string): void {
    for (const c of this.clients) c.write(s);
  }
  close(): void {
    clearInterval(this.keepAlive);
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}
