// A Modbus device's points and actions in the config (drivers modbus-rtu and modbus-tcp), validated
// into typed objects; its connection (TCP) and its gateway unit id.
import { NUMBER_TYPES, type NumberFormat, type NumberType, WORDS, type WordOrder } from './modbus-values.ts';

export type RegisterKind = 'coil' | 'discrete' | 'input' | 'holding';
export const KINDS: readonly RegisterKind[] = ['coil', 'discrete', 'input', 'holding'];

export interface ModbusPoint {
  readonly name: string;
  readonly kind: RegisterKind;
  readonly address: number;
  /** Registers it takes (1 for a bit). */
  readonly words: number;
  /** How its registers hold a number (scale and offset included); undefined for a coil or discrete input. */
  readonly format: NumberFormat | undefined;
  readonly unit: string | undefined;
  readonly min: number | undefined;
  readonly max: number | undefined;
}
/** What an action does with its input: nothing (fixed), or a number/boolean from the body's "value". */
/** `step`: a value must be a whole multiple of it (a register holds whole units of its scale). */
export interface ActionInput {
  readonly required: boolean;
  readonly type: 'number' | 'boolean';
  readonly min: number | undefined;
  readonly max: number | undefined;
  readonly step: number | undefined;
}
export interface ModbusAction {
  readonly name: string;
  readonly write: string;
  readonly fixed: number | boolean | undefined;
  readonly input: ActionInput | undefined;
}
/** A Modbus TCP device's address (driver modbus-tcp); `framing` rtu: RTU frames over TCP (a serial-to-Ethernet server). */
export interface TcpTarget {
  readonly host: string;
  readonly port: number;
  readonly framing: 'tcp' | 'rtu';
}

type Raw = Record<string, unknown>;
export interface Problems {
  bad(path: string, problem: string): void;
}
const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

export function num(o: Raw, k: string, p: string, out: Problems): number | undefined {
  const v = o[k];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) return (out.bad(`${p}.${k}`, 'must be a number'), undefined);
  return v;
}
export function int(o: Raw, k: string, p: string, out: Problems, def: number, min: number, max: number): number {
  const v = o[k];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) return (out.bad(`${p}.${k}`, `must be an integer from ${min} to ${max}`), def);
  return v;
}
export function unknownKeys(o: Raw, p: string, allowed: readonly string[], out: Problems): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) out.bad(`${p}.${k}`, 'unknown key');
}

export function actionInput(a: Raw, p: string, out: Problems, type: 'number' | 'boolean', point?: ModbusPoint | { min: number | undefined; max: number | undefined }): ActionInput {
  const min = num(a, 'min', p, out) ?? point?.min;
  const max = num(a, 'max', p, out) ?? point?.max;
  if (min !== undefined && max !== undefined && min > max) out.bad(`${p}.min`, 'is above max');
  // A register of whole numbers holds whole multiples of its scale (a float holds what it holds);
  // with an offset the multiples start from it, which the driver's own check (encodeNumber) knows.
  const f = point && 'format' in point ? point.format : undefined;
  const step = f && !f.type.startsWith('float') && f.offset === 0 ? f.scale : undefined;
  return { required: true, type, min, max, step };
}

/** The largest read one request may make: 125 registers, 2000 bits (the PDU's limits). */
export const READ_MAX: Record<RegisterKind, number> = { coil: 2000, discrete: 2000, holding: 125, input: 125 };

export function readModbusPoints(raw: Raw, p: string, out: Problems): ModbusPoint[] {
  const points: ModbusPoint[] = [];
  for (const [name, pt] of Object.entries(raw)) {
    const pp = `${p}.points.${name}`;
    if (!isObj(pt)) {
      out.bad(pp, 'must be an object');
      continue;
    }
    unknownKeys(pt, pp, [...KINDS, 'type', 'wordOrder', 'byteSwap', 'scale', 'offset', 'unit', 'min', 'max', 'signed'], out);
    const kinds = KINDS.filter((k) => pt[k] !== undefined);
    if (kinds.length !== 1) {
      out.bad(pp, 'needs exactly one of coil, discrete, input, holding (its address)');
      continue;
    }
    const kind = kinds[0]!;
    const bit = kind === 'coil' || kind === 'discrete';
    const scale = num(pt, 'scale', pp, out) ?? 1;
    if (scale === 0) out.bad(`${pp}.scale`, 'must not be 0');
    let format: NumberFormat | undefined;
    if (bit) {
      for (const k of ['type', 'wordOrder', 'byteSwap', 'scale', 'offset', 'signed']) if (pt[k] !== undefined) out.bad(`${pp}.${k}`, `a ${kind} is one bit: it has no ${k}`);
    } else {
      // `signed: true` is the older spelling of type int16.
      let type: NumberType = pt.signed === true ? 'int16' : 'uint16';
      if (pt.signed !== undefined && typeof pt.signed !== 'boolean') out.bad(`${pp}.signed`, 'must be true or false');
      if (pt.type !== undefined) {
        if (!NUMBER_TYPES.includes(pt.type as NumberType)) out.bad(`${pp}.type`, `must be one of ${NUMBER_TYPES.join(', ')}`);
        else type = pt.type as NumberType;
        if (pt.signed !== undefined) out.bad(`${pp}.signed`, 'give type alone (int16 is signed)');
      }
      const wordOrder = pt.wordOrder ?? 'big';
      if (wordOrder !== 'big' && wordOrder !== 'little') out.bad(`${pp}.wordOrder`, 'must be "big" (high word first) or "little"');
      if (pt.byteSwap !== undefined && typeof pt.byteSwap !== 'boolean') out.bad(`${pp}.byteSwap`, 'must be true or false');
      format = { type, wordOrder: wordOrder as WordOrder, byteSwap: pt.byteSwap === true, scale: scale || 1, offset: num(pt, 'offset', pp, out) ?? 0 };
    }
    const words = format ? WORDS[format.type] : 1;
    const address = int(pt, kind, pp, out, 0, 0, 65535);
    if (address + words > 65536) out.bad(`${pp}.${kind}`, `its ${words} registers run past address 65535`);
    points.push({ name, kind, address, words, format, unit: typeof pt.unit === 'string' ? pt.unit : undefined, min: num(pt, 'min', pp, out), max: num(pt, 'max', pp, out) });
  }
  return points;
}

export function readModbusActions(raw: Raw, points: readonly ModbusPoint[], p: string, out: Problems): ModbusAction[] {
  const actions: ModbusAction[] = [];
  for (const [name, ac] of Object.entries(raw)) {
    const ap = `${p}.actions.${name}`;
    if (!isObj(ac)) {
      out.bad(ap, 'must be an object');
      continue;
    }
    unknownKeys(ac, ap, ['write', 'value', 'from', 'min', 'max'], out);
    const target = points.find((x) => x.name === ac.write);
    if (!target) {
      out.bad(`${ap}.write`, 'must name a point of this device');
      continue;
    }
    if (target.kind !== 'coil' && target.kind !== 'holding') {
      out.bad(`${ap}.write`, `point "${target.name}" is read-only (${target.kind})`);
      continue;
    }
    const type = target.kind === 'coil' ? 'boolean' : 'number';
    if (ac.from !== undefined && ac.from !== 'value') out.bad(`${ap}.from`, 'must be "value"');
    if ((ac.value === undefined) === (ac.from === undefined)) {
      out.bad(ap, 'needs either a fixed "value" or "from": "value"');
      continue;
    }
    if (ac.value !== undefined && typeof ac.value !== type) out.bad(`${ap}.value`, `must be a ${type} for a ${target.kind}`);
    actions.push({ name, write: target.name, fixed: ac.value as number | boolean | undefined, input: ac.from === 'value' ? actionInput(ac, ap, out, type, target) : undefined });
  }
  return actions;
}

const HOST_RE = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const IPV4_RE = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** driver modbus-tcp: host (an IPv4 address or a host name), port (502), framing (tcp). */
export function readTcpTarget(d: Raw, p: string, out: Problems): TcpTarget {
  const host = typeof d.host === 'string' ? d.host : '';
  if (d.host === undefined) out.bad(`${p}.host`, 'is required for driver modbus-tcp');
  else if (!(IPV4_RE.test(host) || (HOST_RE.test(host) && !/^[\d.]+$/.test(host)))) out.bad(`${p}.host`, 'must be an IPv4 address or a host name');
  const framing = d.framing ?? 'tcp';
  if (framing !== 'tcp' && framing !== 'rtu') out.bad(`${p}.framing`, 'must be "tcp" (Modbus TCP) or "rtu" (RTU frames over TCP)');
  return { host, port: int(d, 'port', p, out, 502, 1, 65535), framing: framing === 'rtu' ? 'rtu' : 'tcp' };
}

export interface ReadSpan {
  kind: RegisterKind;
  address: number;
  count: number;
}

/**
 * Point reads grouped into as few requests as fit: same kind, gaps of at most `gapMax` unread
 * addresses, a span within the PDU's limit (READ_MAX); a point of several registers is read whole.
 */
export function planReads(points: ReadonlyArray<{ kind: RegisterKind; address: number; words: number }>, gapMax = 8): ReadSpan[] {
  const out: ReadSpan[] = [];
  // Code-unit order, not localeCompare: that loads ICU's collation tables (3 MB of RSS) for four ASCII words.
  const sorted = [...points].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.address - b.address));
  for (const p of sorted) {
    const last = out[out.length - 1];
    const end = p.address + p.words;
    if (last && last.kind === p.kind && p.address - (last.address + last.count) <= gapMax && end - last.address <= READ_MAX[p.kind]) {
      last.count = Math.max(last.count, end - last.address);
    } else out.push({ kind: p.kind, address: p.address, count: p.words });
  }
  return out;
}
