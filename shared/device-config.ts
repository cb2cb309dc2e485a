// The `devices` and `schedules` sections, validated into typed objects (a Modbus device's points,
// actions and TCP address: shared/modbus-config.ts).
import { type CronSpec, parseCron } from './cron.ts';
import {
  type ActionInput,
  actionInput,
  int,
  type ModbusAction,
  type ModbusPoint,
  num,
  type Problems,
  readModbusActions,
  readModbusPoints,
  readTcpTarget,
  type TcpTarget,
  unknownKeys,
} from './modbus-config.ts';

export type { ActionInput, ModbusAction, ModbusPoint, Problems, RegisterKind, TcpTarget } from './modbus-config.ts';

export interface LinePoint {
  readonly name: string;
  readonly query: string;
  readonly parse: RegExp;
  readonly scale: number;
  readonly unit: string | undefined;
  readonly min: number | undefined;
  readonly max: number | undefined;
}
/** `idempotent`: sending it twice does no harm (e.g. "SET 40"), so a late or garbled reply may be retried. */
export interface LineAction {
  readonly name: string;
  readonly send: string;
  readonly input: ActionInput | undefined;
  readonly idempotent: boolean;
  /** The point this action sets (the UI starts its setpoint there), if it sets one. */
  readonly point: string | undefined;
}
export interface SerialSettings {
  readonly baudRate: number;
  readonly parity: 'none' | 'even' | 'odd';
  readonly dataBits: 7 | 8;
  readonly stopBits: 1 | 2;
}
export interface Attachment {
  readonly board: number;
  readonly boardId: string;
  /** The serial port's path; '' for a Modbus TCP device (the board reaches it over the network). */
  readonly port: string;
}

export type SimulatorKind = 'pump' | 'valve' | 'sensor' | 'counter';
/** How often a device's board reads it when the config does not say. */
export const DEFAULT_POLL_MS = 2000;

interface DeviceBase {
  readonly id: string;
  readonly name: string;
  readonly attach: readonly Attachment[];
  readonly serial: SerialSettings;
  readonly timeoutMs: number;
  readonly retries: number;
  /** Its board reads every point this often (ms), so the panel is never empty or stale; 0: only on demand. */
  readonly pollMs: number;
  /** In the demo (dev/cabled-board.ts --simulate-devices), a simulator of this kind answers on the port; boards ignore it. */
  readonly simulate: SimulatorKind | undefined;
}
export interface ModbusDevice extends DeviceBase {
  readonly driver: 'modbus-rtu' | 'modbus-tcp';
  readonly unitId: number;
  /** driver modbus-tcp: where the device listens. */
  readonly tcp: TcpTarget | undefined;
  /** The unit id a Modbus TCP client asks the cluster's gateway for to reach this device. */
  readonly gatewayUnit: number | undefined;
  readonly points: readonly ModbusPoint[];
  readonly actions: readonly ModbusAction[];
}
export interface LineDevice extends DeviceBase {
  readonly driver: 'line';
  readonly eol: string;
  readonly ok: RegExp | undefined;
  readonly points: readonly LinePoint[];
  readonly actions: readonly LineAction[];
}
export type DeviceConfig = ModbusDevice | LineDevice;
export interface ScheduleConfig {
  readonly cron: string;
  /** `cron`, parsed. */
  readonly when: CronSpec;
  readonly device: string;
  readonly action: string;
  readonly value: number | boolean | undefined;
}

type Raw = Record<string, unknown>;
const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

function str(o: Raw, k: string, p: string, out: Problems, def?: string): string {
  const v = o[k];
  if (v === undefined && def !== undefined) return def;
  if (typeof v !== 'string' || v.length === 0) return (out.bad(`${p}.${k}`, v === undefined ? 'is required' : 'must be a non-empty string'), def ?? '');
  return v;
}
function regex(o: Raw, k: string, p: string, out: Problems, needGroup: boolean): RegExp | undefined {
  if (o[k] === undefined) return undefined;
  const s = str(o, k, p, out);
  try {
    const re = new RegExp(s);
    if (needGroup && !/\((?!\?)/.test(s)) out.bad(`${p}.${k}`, 'needs a capture group for the value');
    return re;
  } catch {
    out.bad(`${p}.${k}`, 'is not a valid regular expression');
    return undefined;
  }
}

function serial(o: Raw, p: string, out: Problems): SerialSettings {
  const s = o.serial === undefined ? {} : o.serial;
  if (!isObj(s)) return (out.bad(`${p}.serial`, 'must be an object'), { baudRate: 9600, parity: 'none', dataBits: 8, stopBits: 1 });
  unknownKeys(s, `${p}.serial`, ['baudRate', 'parity', 'dataBits', 'stopBits'], out);
  const parity = str(s, 'parity', `${p}.serial`, out, 'none');
  if (!['none', 'even', 'odd'].includes(parity)) out.bad(`${p}.serial.parity`, 'must be none, even or odd');
  const dataBits = int(s, 'dataBits', `${p}.serial`, out, 8, 7, 8);
  const stopBits = int(s, 'stopBits', `${p}.serial`, out, 1, 1, 2);
  return { baudRate: int(s, 'baudRate', `${p}.serial`, out, 9600, 50, 4_000_000), parity: parity as SerialSettings['parity'], dataBits: dataBits as 7 | 8, stopBits: stopBits as 1 | 2 };
}

export function readDevices(list: readonly unknown[], boardIds: readonly string[], out: Problems): DeviceConfig[] {
  const devices: DeviceConfig[] = [];
  const ids = new Set<string>();
  const portSettings = new Map<string, { serial: SerialSettings; path: string }>();
  list.forEach((d, i) => {
    const p = `devices[${i}]`;
    if (!isObj(d)) {
      out.bad(p, 'must be an object');
      return;
    }
    const id = str(d, 'id', p, out);
    if (id && !ID_RE.test(id)) out.bad(`${p}.id`, 'must be 1-32 of A-Z a-z 0-9 _ -');
    if (ids.has(id)) out.bad(`${p}.id`, `duplicate device "${id}"`);
    ids.add(id);
    const driver = str(d, 'driver', p, out);
    if (driver !== 'modbus-rtu' && driver !== 'modbus-tcp' && driver !== 'line') {
      out.bad(`${p}.driver`, 'must be "modbus-rtu", "modbus-tcp" or "line"');
      return;
    }
    const tcp = driver === 'modbus-tcp';
    const common = ['id', 'name', 'driver', 'attach', 'serial', 'timeoutMs', 'retries', 'pollMs', 'points', 'actions', 'simulate'];
    const simulate = d.simulate;
    if (simulate !== undefined && !['pump', 'valve', 'sensor', 'counter'].includes(simulate as string)) out.bad(`${p}.simulate`, 'must be "pump", "valve", "sensor" or "counter"');
    if (simulate === 'pump' && driver !== 'modbus-rtu') out.bad(`${p}.simulate`, 'the pump simulator speaks Modbus RTU');
    if ((simulate === 'valve' || simulate === 'sensor' || simulate === 'counter') && driver !== 'line') out.bad(`${p}.simulate`, `the ${simulate} simulator speaks the line protocol`);
    const modbusKeys = ['unitId', 'gatewayUnit', ...(tcp ? ['host', 'port', 'framing'] : [])];
    unknownKeys(d, p, driver === 'line' ? [...common, 'eol', 'ok'] : [...common, ...modbusKeys].filter((k) => !(tcp && (k === 'serial' || k === 'simulate'))), out);
    const ser = serial(d, p, out);
    const attach: Attachment[] = [];
    const al = d.attach;
    if (!Array.isArray(al) || al.length === 0) out.bad(`${p}.attach`, tcp ? 'needs at least one { "board" } that can reach the device' : 'needs at least one { "board", "port" }');
    else
      al.forEach((a, j) => {
        const ap = `${p}.attach[${j}]`;
        if (!isObj(a)) {
          out.bad(ap, 'must be an object');
          return;
        }
        unknownKeys(a, ap, tcp ? ['board'] : ['board', 'port'], out);
        const boardId = str(a, 'board', ap, out);
        const board = boardIds.indexOf(boardId);
        if (boardId && board < 0) out.bad(`${ap}.board`, `"${boardId}" is not one of the boards`);
        if (tcp) {
          if (attach.some((x) => x.board === board)) out.bad(`${ap}.board`, 'attached twice to the same board');
          attach.push({ board, boardId, port: '' });
          return;
        }
        const port = str(a, 'port', ap, out);
        if (port && !port.startsWith('/')) out.bad(`${ap}.port`, 'must be an absolute path (e.g. /dev/ttyUSB0)');
        if (attach.some((x) => x.board === board)) out.bad(`${ap}.board`, 'attached twice to the same board');
        // Several devices may share one port (an RS-485 bus) only with the same line settings.
        const key = `${boardId} ${port}`;
        const prev = portSettings.get(key);
        if (prev && JSON.stringify(prev.serial) !== JSON.stringify(ser)) out.bad(`${p}.serial`, `differs from another device on ${boardId}:${port}`);
        portSettings.set(key, { serial: ser, path: ap });
        attach.push({ board, boardId, port });
      });
    const base = {
      id,
      name: typeof d.name === 'string' ? d.name : id,
      attach,
      serial: ser,
      timeoutMs: int(d, 'timeoutMs', p, out, 500, 10, 60_000),
      retries: int(d, 'retries', p, out, 1, 0, 5),
      pollMs: d.pollMs === 0 ? 0 : int(d, 'pollMs', p, out, DEFAULT_POLL_MS, 100, 86_400_000),
      simulate: simulate as SimulatorKind | undefined,
    };
    const rawPoints = isObj(d.points) ? d.points : (out.bad(`${p}.points`, 'must be an object of named points'), {});
    const rawActions = d.actions === undefined ? {} : isObj(d.actions) ? d.actions : (out.bad(`${p}.actions`, 'must be an object of named actions'), {});
    if (Object.keys(rawActions).includes('read')) out.bad(`${p}.actions.read`, '"read" is built in (reads every point)');
    if (driver !== 'line' && Object.keys(rawActions).includes('modbus')) out.bad(`${p}.actions.modbus`, '"modbus" is built in (the gateway\'s requests)');
    if (driver !== 'line') {
      const points = readModbusPoints(rawPoints, p, out);
      const actions = readModbusActions(rawActions, points, p, out);
      // A TCP device may be any unit (0 and 255 are common); on a serial bus 1-247 (0 is broadcast).
      const unitId = tcp ? int(d, 'unitId', p, out, 1, 0, 255) : int(d, 'unitId', p, out, 1, 1, 247);
      const gatewayUnit = d.gatewayUnit === undefined ? undefined : int(d, 'gatewayUnit', p, out, 1, 1, 247);
      if (gatewayUnit !== undefined) {
        const other = devices.find((x) => x.driver !== 'line' && x.gatewayUnit === gatewayUnit);
        if (other) out.bad(`${p}.gatewayUnit`, `${gatewayUnit} is already device "${other.id}"'s`);
      }
      devices.push({ ...base, driver, unitId, tcp: tcp ? readTcpTarget(d, p, out) : undefined, gatewayUnit, points, actions });
    } else {
      const eol = typeof d.eol === 'string' && d.eol.length > 0 && d.eol.length <= 4 ? d.eol : d.eol === undefined ? '\n' : (out.bad(`${p}.eol`, 'must be 1 to 4 characters'), '\n');
      const ok = regex(d, 'ok', p, out, false);
      const points: LinePoint[] = [];
      for (const [name, pt] of Object.entries(rawPoints)) {
        const pp = `${p}.points.${name}`;
        if (!isObj(pt)) {
          out.bad(pp, 'must be an object');
          continue;
        }
        unknownKeys(pt, pp, ['query', 'parse', 'scale', 'unit', 'min', 'max'], out);
        const parse = regex(pt, 'parse', pp, out, true);
        if (!parse) {
          out.bad(`${pp}.parse`, 'is required');
          continue;
        }
        points.push({
          name,
          query: str(pt, 'query', pp, out),
          parse,
          scale: num(pt, 'scale', pp, out) ?? 1,
          unit: typeof pt.unit === 'string' ? pt.unit : undefined,
          min: num(pt, 'min', pp, out),
          max: num(pt, 'max', pp, out),
        });
      }
      const actions: LineAction[] = [];
      for (const [name, ac] of Object.entries(rawActions)) {
        const ap = `${p}.actions.${name}`;
        if (!isObj(ac)) {
          out.bad(ap, 'must be an object');
          continue;
        }
        unknownKeys(ac, ap, ['send', 'min', 'max', 'idempotent', 'point'], out);
        const send = str(ac, 'send', ap, out);
        if (ac.idempotent !== undefined && typeof ac.idempotent !== 'boolean') out.bad(`${ap}.idempotent`, 'must be true or false');
        const point = ac.point === undefined ? undefined : str(ac, 'point', ap, out);
        if (point !== undefined && !points.some((x) => x.name === point)) out.bad(`${ap}.point`, `"${point}" is not one of the device's points`);
        actions.push({ name, send, input: send.includes('{value}') ? actionInput(ac, ap, out, 'number') : undefined, idempotent: ac.idempotent === true, point });
      }
      devices.push({ ...base, driver, eol, ok, points, actions });
    }
  });
  return devices;
}

/** The most schedules a config may hold (the master matches each against every second). */
export const SCHEDULES_MAX = 256;

export function readSchedules(list: readonly unknown[], devices: readonly DeviceConfig[], out: Problems): ScheduleConfig[] {
  const res: ScheduleConfig[] = [];
  if (list.length > SCHEDULES_MAX) out.bad('schedules', `has ${list.length} entries; at most ${SCHEDULES_MAX}`);
  list.forEach((s, i) => {
    const p = `schedules[${i}]`;
    if (!isObj(s)) {
      out.bad(p, 'must be an object');
      return;
    }
    unknownKeys(s, p, ['cron', 'device', 'action', 'value'], out);
    const cron = str(s, 'cron', p, out);
    const when = parseCron(cron);
    if (cron && typeof when === 'string') out.bad(`${p}.cron`, when);
    const device = str(s, 'device', p, out);
    const dev = devices.find((d) => d.id === device);
    if (device && !dev) out.bad(`${p}.device`, `no device "${device}"`);
    const action = str(s, 'action', p, out, 'read');
    if (dev && action !== 'read' && !dev.actions.some((a) => a.name === action)) out.bad(`${p}.action`, `device "${device}" has no action "${action}"`);
    const value = s.value;
    if (value !== undefined && typeof value !== 'number' && typeof value !== 'boolean') out.bad(`${p}.value`, 'must be a number or boolean');
    if (typeof when !== 'string') res.push({ cron, when, device, action, value: value as number | boolean | undefined });
  });
  return res;
}
