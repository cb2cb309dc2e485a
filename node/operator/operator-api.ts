// The operator's read-outs over HTTP, answered by the board asked (every board holds them, so no
// dispatch is needed): GET /api/history, GET /api/alarms, POST /api/alarms/{id}/ack, GET /api/log,
// and GET /api/sync (the log and every point's history since a time, for a board that was away).
import { EwsError } from '../../shared/errors.ts';
import { type Answer, sendJson } from '../http/http-io.ts';
import type { OperatorState } from './operator-state.ts';

const ACK_PATH = /^\/api\/alarms\/([A-Za-z0-9_-]{1,64})\/ack$/;

function sinceParam(u: URL): number {
  const raw = u.searchParams.get('since');
  if (raw === null) return 0;
  if (!/^\d{1,16}$/.test(raw)) throw new EwsError('BAD_REQUEST', 'since must be ms since the epoch');
  return Number(raw);
}

/** Handles the path if it is one of these; false otherwise. `user`: who is asking (checked by the caller). */
export function operatorApi(op: OperatorState, method: string, u: URL, accept: string | undefined, user: string | null, res: Answer): boolean {
  const path = u.pathname;
  if (path === '/api/history' && method === 'GET') {
    const device = u.searchParams.get('device') ?? '',
      point = u.searchParams.get('point') ?? '';
    const samples = op.history.query(device, point, sinceParam(u), Date.now());
    if (!samples) throw new EwsError('NOT_FOUND', `no point "${point.slice(0, 64)}" on a device "${device.slice(0, 64)}"`);
    if (u.searchParams.get('format') === 'csv' || (accept ?? '').includes('text/csv')) {
      const body = `time,iso,value\n${samples.map(([t, v]) => `${t},${new Date(t).toISOString()},${v}`).join('\n')}\n`;
      res.writeHead(200, {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${device}-${point}.csv"`,
        'content-length': Buffer.byteLength(body),
        'cache-control': 'no-store',
      });
      res.end(body);
      return true;
    }
    sendJson(res, 200, samples);
    return true;
  }
  if (path === '/api/alarms' && method === 'GET') {
    sendJson(res, 200, op.alarms.list());
    return true;
  }
  if (path === '/api/log' && method === 'GET') {
    sendJson(res, 200, op.log.since(sinceParam(u)));
    return true;
  }
  if (path === '/api/sync' && method === 'GET') {
    sendJson(res, 200, op.syncSince(sinceParam(u)));
    return true;
  }
  const ack = ACK_PATH.exec(path);
  if (ack && method === 'POST') {
    const id = ack[1]!;
    const a = op.alarms.get(id);
    if (!a) throw new EwsError('NOT_FOUND', `no alarm "${id}"`);
    if (!a.active) throw new EwsError('NOT_ACTIVE', `alarm ${id} is not active`);
    op.record('alarm-ack', { user, subject: id, text: `acknowledged: ${a.message}` });
    sendJson(res, 200, op.alarms.get(id));
    return true;
  }
  return false;
}
