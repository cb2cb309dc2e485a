// CGI handlers for devices: read every point now, or run an action.

import { deviceTarget } from '../../master/device-route.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError, errorResponse } from '../../shared/errors.ts';
import { encodeReply, isWrite, parseRequest } from '../../shared/modbus-pdu.ts';
import { resolveAction } from '../devices/action-input.ts';
import type { DeviceManager } from '../devices/device-manager.ts';
import type { Captured } from '../idempotency/idempotent-exec.ts';
import type { ExecRequest } from './exec-request.ts';

/** Runs the request against the device; the answer (success or coded error) comes back as data. */
export async function deviceCgi(cfg: Config, board: BoardConfig, devices: DeviceManager, x: ExecRequest, path: string): Promise<Captured> {
  try {
    return { status: 200, body: JSON.stringify(await run(cfg, board, devices, x, path)) };
  } catch (e) {
    const r = errorResponse(e);
    const headers: Record<string, string> = {};
    if (r.headers['retry-after']) headers['retry-after'] = r.headers['retry-after'];
    return { status: r.status, body: r.body, headers };
  }
}

async function run(cfg: Config, board: BoardConfig, devices: DeviceManager, x: ExecRequest, path: string): Promise<object> {
  const t = deviceTarget(path, x.method, cfg.devices)!;
  const priority = x.origin === 'schedule' ? 'scheduled' : 'control';
  const id = t.device.id;
  if (t.action === 'read') {
    const r = await devices.read(id, priority);
    return { ok: true, device: id, action: 'read', result: r.result, board: board.id, ms: r.ms };
  }
  if (t.action === 'modbus' && t.device.driver !== 'line') return relay(cfg, board, devices, t.device.id, x.body, priority);
  const a = resolveAction(t.device, t.action, x.body);
  const r = await devices.act(id, a.name, a.value, priority);
  return { ok: true, device: id, action: a.name, result: r.result, board: board.id, ms: r.ms };
}

/**
 * The gateway's raw request (node/services/modbus-gateway.ts): {"pdu": hex, "client": address}
 * relayed to the device as it is; the device's response PDU back, an exception's included. A
 * write needs gateway.modbusTcp.writes here too.
 */
async function relay(cfg: Config, board: BoardConfig, devices: DeviceManager, id: string, body: Buffer, priority: 'control' | 'scheduled'): Promise<object> {
  let hex: unknown;
  try {
    hex = (JSON.parse(body.toString('utf8')) as { pdu?: unknown }).pdu;
  } catch {
    throw new EwsError('BAD_REQUEST', 'the body must be JSON: {"pdu": "<hex>"}');
  }
  if (typeof hex !== 'string' || !/^(?:[0-9a-fA-F]{2}){1,253}$/.test(hex)) throw new EwsError('BAD_REQUEST', 'pdu must be 1 to 253 bytes in hex');
  const pdu = Buffer.from(hex, 'hex');
  const parsed = parseRequest(pdu);
  if ('exception' in parsed) return { ok: true, device: id, action: 'modbus', pdu: encodeReply(pdu[0]!, { kind: 'exception', code: parsed.exception }).toString('hex'), board: board.id };
  const write = isWrite(parsed.req);
  if (write && !cfg.gateway.modbusTcp?.writes) throw new EwsError('FORBIDDEN', 'the gateway takes no writes (gateway.modbusTcp.writes is off)');
  const reply = await devices.relay(id, pdu, write, priority);
  return { ok: true, device: id, action: 'modbus', pdu: reply.toString('hex'), board: board.id };
}
