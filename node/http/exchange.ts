// What the master's intake carries: a client's HTTP exchange inside a job, and a job the master
// runs on itself.
import type { Origin } from '../../shared/dispatch-frame.ts';
import type { ClientAnswer, ClientRequest } from './lean-exchange.ts';

/** The HTTP exchange a job carries. */
export interface Exchange {
  readonly req: ClientRequest;
  readonly res: ClientAnswer;
  readonly body: Buffer;
  readonly method: string;
  readonly url: string;
  readonly origin: Origin;
  readonly clsName: string;
  /** The Idempotency-Key as the cluster records it: (who sent it, key). The request's own header stays as the client sent it, so a request passed on to another master is scoped once, there. */
  readonly key: string | undefined;
  /** Who is asking, as the guard established it (`name role via`), for the board that runs it (a CGI program's REMOTE_USER). */
  readonly user: string | undefined;
  /** CGI local redirects followed to reach this request (0: the client's own). */
  readonly hops: number;
  readonly session: boolean;
  /** While the master runs it itself: how to stop that run when its client leaves (the intake's own). */
  local: { cancel(): void } | undefined;
}

export interface LocalRun {
  method: string;
  url: string;
  headers: ClientRequest['headers'];
  body: Buffer;
  cls: string;
  level: number;
  origin: Origin;
  res: ClientAnswer;
  /** A CGI program's local redirect: the intake serves that path for the same client instead. */
  redirect(location: string): void;
}
