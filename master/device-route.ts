// Which boards may serve a request: a device's control goes only to the boards it is attached to.
import type { DeviceConfig } from '../shared/device-config.ts';
import { EwsError } from '../shared/errors.ts';

const DEVICE_PATH = /^\/cgi-bin\/devices\/([^/?]+)(?:\/([^/?]+))?\/?$/;

export interface DeviceTarget { device: DeviceConfig; action: string }

/** The device a path addresses, or undefined for other paths; an unknown device is a 404 at once. */
export function deviceTarget(path: string, method: string, devices: readonly DeviceConfig[]): DeviceTarget | undefined {
  if (!path.startsWith('/cgi-bin/devices/')) return undefined;
  const m = DEVICE_PATH.exec(path);
  if (!m) throw new EwsError('NOT_FOUND', 'use /cgi-bin/devices/{id} or /cgi-bin/devices/{id}/{action}');
  const id = decodeURIComponent(m[1]!);
  const device = devices.find((d) => d.id === id);
  if (!device) throw new EwsError('NOT_FOUND', `no device "${id.slice(0, 64)}"`);
  const action = m[2] === undefined ? 'read' : decodeURIComponent(m[2]);
  if (m[2] === undefined ? method !== 'GET' : method !== 'POST') throw new EwsError('METHOD_NOT_ALLOWED', m[2] === undefined ? 'read a device with GET' : 'run an action with POST');
  return { device, action };
}
