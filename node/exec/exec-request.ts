// What a board is asked to execute once the master has dispatched a request to it: the one type
// the handlers, the device CGI and the executor share (kept apart so none of them imports another
// for it).
import type { IncomingHttpHeaders } from 'node:http';
import type { Cancellation } from '../../shared/cancel.ts';
import type { Origin } from '../../shared/dispatch-frame.ts';

export interface ExecRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  cls: string;
  /** Content level the master chose (1..CONTENT_LEVELS). */
  level: number;
  /** Who asked (schedules' reads queue behind control at the device port). */
  origin: Origin;
  /** Cancelled when the client (or the master) goes away: stop the work. */
  signal: Cancellation;
  /** The master's own run: serve a CGI program's local redirect inside the cluster (the answer is then the new path's). */
  redirect?: (location: string) => void;
}
