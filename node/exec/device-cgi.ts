// CGI handlers for devices: read every point now, or run an action.

import { deviceTarget } from '../../master/device-route.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { errorResponse } from '../../shared/errors.ts';
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
  const a = resolveAction(t.device, t.action, x.body);
  const r = await devices.act(id, a.name, a.value, priority);
  return { ok: true, device: id, action: a.name, result: r.result, board: board.id, ms: r.ms };
}
