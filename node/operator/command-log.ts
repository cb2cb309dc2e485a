// The master writes each device command, and every call of a CGI program, to the audit log once
// its answer has gone out: who, which device and action (or program and method), the value, the
// outcome, and the board that ran it.
import { programTarget } from '../../shared/cgi.ts';
import type { ClientAnswer } from '../http/lean-exchange.ts';
import type { OperatorState } from './operator-state.ts';

const DEVICE_ACTION = /^\/cgi-bin\/devices\/([^/?]+)\/([^/?]+)$/;

/** Every call of a CGI program, reads too: what a program does is the program's. */
export function logProgramWhenAnswered(op: OperatorState, user: string | null, method: string, path: string, res: ClientAnswer): void {
  const program = programTarget(path);
  if (!program) return;
  res.once('finish', () => {
    const board = res.getHeader('x-ews-board');
    const replayed = res.getHeader('idempotent-replayed') === 'true';
    op.record('command', {
      user,
      subject: program.name,
      status: res.statusCode,
      text: `${method} ${program.name}${program.pathInfo.slice(0, 64)} → ${res.statusCode}${typeof board === 'string' ? ` on ${board}` : ''}${replayed ? ' (replayed)' : ''}`,
    });
  });
}

export function logCommandWhenAnswered(op: OperatorState, user: string | null, path: string, body: Buffer, res: ClientAnswer): void {
  const m = DEVICE_ACTION.exec(path);
  if (!m || m[2] === 'read') return; // reads (the schedules' every second) are not commands
  const device = decodeURIComponent(m[1]!).slice(0, 64),
    action = decodeURIComponent(m[2]!).slice(0, 32);
  let value = '';
  try {
    const v = body.length > 0 && body.length <= 256 ? (JSON.parse(body.toString('utf8')) as { value?: unknown }).value : undefined;
    if (typeof v === 'number' || typeof v === 'boolean') value = ` ${String(v)}`;
  } catch {
    /* a malformed body is the device handler's 400; the log just has no value */
  }
  res.once('finish', () => {
    const board = res.getHeader('x-ews-board');
    const replayed = res.getHeader('idempotent-replayed') === 'true';
    op.record('command', {
      user,
      subject: device,
      status: res.statusCode,
      text: `${action}${value} → ${res.statusCode}${typeof board === 'string' ? ` on ${board}` : ''}${replayed ? ' (replayed)' : ''}`,
    });
  });
}
