// CGI handlers for devices (SPEC §4): read every point now, or run an action.
import type { ServerResponse } from 'node:http';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { sendJson } from '../../shared/http-io.ts';
import { deviceTarget } from '../../master/device-route.ts';
import { resolveAction } from '../devices/action-input.ts';
import type { DeviceManager } from '../devices/device-manager.ts';
import type { ExecRequest } from '../worker.ts';

export async function deviceCgi(cfg: Config, board: BoardConfig, devices: DeviceManager, x: ExecRequest, path: string, res: ServerResponse): Promise<void> {
  const t = deviceTarget(path, x.method, cfg.devices)!;
  const priority = x.headers['x-ews-origin'] === 'schedule' ? 'scheduled' : 'control';
  const id = t.device.id;
  if (t.action === 'read') {
    const r = await devices.read(id, priority);
    return sendJson(res, 200, { ok: true, device: id, action: 'read', result: r.result, board: board.id, ms: r.ms });
  }
  const a = resolveAction(t.device, t.action, x.body);
  const r = await devices.act(id, a.name, a.value, priority);
  sendJson(res, 200, { ok: true, device: id, action: a.name, result: r.result, board: board.id, ms: r.ms });
}
