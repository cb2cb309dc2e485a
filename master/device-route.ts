// Which boards may serve a request: a device's control goes only to the boards it is attached to.
import type { DeviceConfig } from '../shared/device-config.ts';
import { EwsError } from '../shared/errors.ts';
import type { IdemCheck, IdemRecord } from '../shared/idempotency-store.ts';

const DEVICE_PATH = /^\/cgi-bin\/devices\/([^/?]+)(?:\/([^/?]+))?\/?$/;

export interface DeviceTarget {
  device: DeviceConfig;
  action: string;
}

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

/** What to do with a device command whose Idempotency-Key the master has seen (`check`). */
export type KeyRoute =
  | { kind: 'boards'; boards: readonly number[] }
  | { kind: 'replay'; rec: IdemRecord; body: string }
  | { kind: 'refuse'; code: 'IDEMPOTENCY_CONFLICT' | 'IDEMPOTENCY_UNKNOWN' | 'IDEMPOTENCY_STORE_FULL'; retryAfterS?: number };

/**
 * A retry is answered from its record when the record holds the answer; otherwise it goes to the
 * board that ran (or is running) the first attempt while that board is up, so it joins that run
 * or replays its answer instead of meeting a pending record elsewhere. A key whose board died
 * between the device and the record is never sent anywhere again. A new key meeting a store full
 * of live ones is refused here, before it costs a dispatch.
 */
export function keyRoute(check: IdemCheck, attach: readonly number[], running: (board: number) => boolean): KeyRoute {
  if (check.kind === 'conflict') return { kind: 'refuse', code: 'IDEMPOTENCY_CONFLICT' };
  if (check.kind === 'unknown') return { kind: 'refuse', code: 'IDEMPOTENCY_UNKNOWN' };
  if (check.kind === 'full') return { kind: 'refuse', code: 'IDEMPOTENCY_STORE_FULL', retryAfterS: check.retryAfterS };
  if (check.kind === 'done' && check.rec.body !== undefined) return { kind: 'replay', rec: check.rec, body: check.rec.body };
  const holder = check.kind === 'pending' ? check.board : check.kind === 'done' ? check.rec.board : -1;
  if (holder >= 0 && attach.includes(holder) && running(holder)) return { kind: 'boards', boards: [holder] };
  return { kind: 'boards', boards: attach };
}
