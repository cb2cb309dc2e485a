// The master writes each device command, and every call of a CGI program, to the audit log once
// its answer has gone out: who, which device and action (or program and method), the value, the
// outcome, and the board that ran it.
import { programTarget } from '../../shared/cgi.ts';
import { isWrite, parseRequest, type Request } from '../../shared/modbus-pdu.ts';
import type { ClientAnswer } from '../http/lean-exchange.ts';
import type { OperatorState } from './operator-state.ts';

const DEVICE_ACTION = /^\/cgi-bin\/devices\/([^/?]+)\/([^/?]+)$/;

/** Every call of a CGI program, reads too: what a program does is the program's. */
export function logProgramWhenAnswered(op: OperatorState, user: string | null, method: string, path: string, res: ClientAnswer): void {
  const program = programTarget(path);
  if (!program) return;
  recordWhenAnswered(op, user, program.name, `${method} ${program.name}${program.pathInfo.slice(0, 64)}`, res);
}

export function logCommandWhenAnswered(op: OperatorState, user: string | null, path: string, body: Buffer, res: ClientAnswer): void {
  const m = DEVICE_ACTION.exec(path);
  if (!m || m[2] === 'read') return; // reads (the schedules' every second) are not commands
  const device = decodeURIComponent(m[1]!).slice(0, 64),
    action = decodeURIComponent(m[2]!).slice(0, 32);
  if (action === 'modbus') {
    logGatewayWrite(op, user, device, body, res);
    return;
  }
  let value = '';
  try {
    const v = body.length > 0 && body.length <= 256 ? (JSON.parse(body.toString('utf8')) as { value?: unknown }).value : undefined;
    if (typeof v === 'number' || typeof v === 'boolean') value = ` ${String(v)}`;
  } catch {
    /* a malformed body is the device handler's 400; the log just has no value */
  }
  recordWhenAnswered(op, user, device, `${action}${value}`, res);
}

/** The command in the audit log once its answer has gone: what, its status, the board that ran it, and whether it was replayed. */
function recordWhenAnswered(op: OperatorState, user: string | null, subject: string, what: string, res: ClientAnswer): void {
  res.once('finish', () => {
    const board = res.getHeader('x-ews-board');
    const replayed = res.getHeader('idempotent-replayed') === 'true';
    op.record('command', { user, subject, status: res.statusCode, text: `${what} → ${res.statusCode}${typeof board === 'string' ? ` on ${board}` : ''}${replayed ? ' (replayed)' : ''}` });
  });
}

/** A write through the Modbus gateway (reads are not commands): the function, where, how many, and the client's address. */
function logGatewayWrite(op: OperatorState, user: string | null, device: string, body: Buffer, res: ClientAnswer): void {
  let req: Request | undefined;
  let client = '?';
  try {
    const b = JSON.parse(body.toString('utf8')) as { pdu?: unknown; client?: unknown };
    const parsed = typeof b.pdu === 'string' && b.pdu.length <= 506 ? parseRequest(Buffer.from(b.pdu, 'hex')) : undefined;
    req = parsed && 'req' in parsed ? parsed.req : undefined;
    if (typeof b.client === 'string') client = b.client.slice(0, 45);
  } catch {
    /* the board answers a bad body with a 400 */
  }
  if (!req || !isWrite(req)) return;
  const r = req;
  const what = r.fc === 15 || r.fc === 16 ? `${r.values.length} from ${r.address}` : r.fc === 5 ? `${r.address} = ${r.value ? 'on' : 'off'}` : r.fc === 6 ? `${r.address} = ${r.value}` : '';
  recordWhenAnswered(op, user, device, `modbus FC${r.fc} ${what} from ${client}`, res);
}
