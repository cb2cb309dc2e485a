// What an operator configures beyond devices: how much history each point keeps, and alarms on
// points (part of parseConfig). Built-in alarms (a device offline, a board down) need no config.
import { isObj, num, type Raw, type Reader } from './config-reader.ts';
import type { DeviceConfig } from './device-config.ts';

export interface HistoryConfig {
  /** How far back each point's samples go. */
  readonly retentionS: number;
  /** At most one sample per point per interval. */
  readonly intervalS: number;
  /** How often a board appends its new samples to its stateDir (flash wears out: batches, not every sample). */
  readonly flushS: number;
}
export type AlarmSeverity = 'info' | 'warning' | 'critical';
export interface AlarmConfig {
  readonly id: string;
  readonly device: string;
  readonly point: string;
  /** Exactly one condition: the value above, below, or equal to a threshold. */
  readonly above: number | undefined;
  readonly below: number | undefined;
  readonly equals: number | boolean | undefined;
  readonly severity: AlarmSeverity;
  readonly message: string;
  /** A raised above/below alarm clears only this far back on the safe side of its threshold. */
  readonly hysteresis: number;
}

/** Samples kept per point at most (retentionS / intervalS): memory stays bounded. */
export const HISTORY_SAMPLES_MAX = 100_000;
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

export function readHistory(r: Reader, raw: Raw): HistoryConfig {
  const h = r.obj(raw, 'history', '', ['retentionS', 'intervalS', 'flushS'], false) ?? {};
  const intervalS = r.int(h, 'intervalS', 'history', 5, 1, 3600);
  const flushS = r.int(h, 'flushS', 'history', 60, 1, 86_400);
  const retentionS = r.int(h, 'retentionS', 'history', 3600, 1, 30 * 86400);
  if (retentionS / intervalS > HISTORY_SAMPLES_MAX) r.bad('history.retentionS', `keeps at most ${HISTORY_SAMPLES_MAX} samples per point: raise intervalS or lower retentionS`);
  return { retentionS, intervalS, flushS };
}

export function readAlarms(r: Reader, raw: Raw, devices: readonly DeviceConfig[]): AlarmConfig[] {
  const list = r.arr(raw, 'alarms', '', false) ?? [];
  const out: AlarmConfig[] = [];
  list.forEach((a, i) => {
    const p = `alarms[${i}]`;
    if (!isObj(a)) {
      r.bad(p, 'must be an object');
      return;
    }
    r.noUnknown(a, p, ['id', 'device', 'point', 'above', 'below', 'equals', 'severity', 'message', 'hysteresis']);
    const id = r.str(a, 'id', p);
    if (id && !ID_RE.test(id)) r.bad(`${p}.id`, 'must be 1-32 letters, digits, _ or -');
    if (out.some((x) => x.id === id)) r.bad(`${p}.id`, `duplicate of another alarm "${id}"`);
    const deviceId = r.str(a, 'device', p);
    const device = devices.find((d) => d.id === deviceId);
    if (deviceId && !device) r.bad(`${p}.device`, `"${deviceId}" is not one of the devices`);
    const point = r.str(a, 'point', p);
    if (device && point && !device.points.some((x) => x.name === point)) r.bad(`${p}.point`, `"${point}" is not a point of ${deviceId}`);
    const above = a.above === undefined ? undefined : num(r, a, 'above', p, 0, -1e12, 1e12);
    const below = a.below === undefined ? undefined : num(r, a, 'below', p, 0, -1e12, 1e12);
    const equals = a.equals === undefined ? undefined : typeof a.equals === 'boolean' ? a.equals : num(r, a, 'equals', p, 0, -1e12, 1e12);
    if ([above, below, equals].filter((x) => x !== undefined).length !== 1) r.bad(p, 'needs exactly one of above, below or equals');
    const severity = r.str(a, 'severity', p, 'warning');
    if (!['info', 'warning', 'critical'].includes(severity)) r.bad(`${p}.severity`, 'must be "info", "warning" or "critical"');
    const message =
      a.message === undefined ? `${deviceId}.${point} ${above !== undefined ? `above ${above}` : below !== undefined ? `below ${below}` : `is ${String(equals)}`}` : r.str(a, 'message', p);
    if (message.length > 120) r.bad(`${p}.message`, 'must be at most 120 characters');
    const hysteresis = num(r, a, 'hysteresis', p, 0, 0, 1e12);
    out.push({ id, device: deviceId, point, above, below, equals, severity: severity as AlarmSeverity, message: message.slice(0, 120), hysteresis });
  });
  return out;
}
