// The `gateway` section: the cluster's Modbus TCP gateway (node/services/modbus-gateway.ts). Pure.
import type { Raw, Reader } from './config-reader.ts';
import { ipv4ToInt, isIPv4 } from './ipv4.ts';

/** An IPv4 network: addresses whose top `bits` bits equal `base`'s. */
export interface Cidr {
  readonly text: string;
  readonly base: number;
  readonly bits: number;
}

export interface ModbusGatewayConfig {
  /** The TCP port the master serves on the cluster address (502, Modbus TCP's). */
  readonly port: number;
  /** The clients it answers (Modbus has no authentication): a connection from anywhere else is closed unread. */
  readonly allow: readonly Cidr[];
  /** Whether clients may write (FC5, 6, 15, 16); refused with exception 1 when not. */
  readonly writes: boolean;
  /** Client connections at once; one more is closed at once. */
  readonly connectionsMax: number;
}

export interface GatewayConfig {
  readonly modbusTcp: ModbusGatewayConfig | undefined;
}

export function parseCidr(text: string): Cidr | undefined {
  const [addr, len, extra] = text.split('/');
  if (extra !== undefined || addr === undefined || !isIPv4(addr)) return undefined;
  const bits = len === undefined ? 32 : /^\d{1,2}$/.test(len) && Number(len) <= 32 ? Number(len) : -1;
  if (bits < 0) return undefined;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return { text, base: (ipv4ToInt(addr) & mask) >>> 0, bits };
}

/** Whether `address` (IPv4, or IPv4-mapped IPv6 as Node reports it) is inside one of `allow`. */
export function allowed(address: string, allow: readonly Cidr[]): boolean {
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (!isIPv4(a)) return false;
  const n = ipv4ToInt(a);
  return allow.some((c) => {
    const mask = c.bits === 0 ? 0 : (0xffffffff << (32 - c.bits)) >>> 0;
    return (n & mask) >>> 0 === c.base;
  });
}

export function readGateway(r: Reader, raw: Raw): GatewayConfig {
  const g = r.obj(raw, 'gateway', '', ['modbusTcp'], false);
  const m = g && r.obj(g, 'modbusTcp', 'gateway', ['port', 'allow', 'writes', 'connectionsMax'], false);
  if (!m) return { modbusTcp: undefined };
  const list = r.arr(m, 'allow', 'gateway.modbusTcp', true) ?? [];
  const allow: Cidr[] = [];
  list.forEach((c, i) => {
    const cidr = typeof c === 'string' ? parseCidr(c) : undefined;
    if (cidr) allow.push(cidr);
    else r.bad(`gateway.modbusTcp.allow[${i}]`, 'must be an IPv4 network (10.0.0.0/24) or address');
  });
  if (list.length === 0) r.bad('gateway.modbusTcp.allow', 'needs at least one client network: Modbus has no authentication');
  if (m.writes !== undefined && typeof m.writes !== 'boolean') r.bad('gateway.modbusTcp.writes', 'must be true or false');
  return { modbusTcp: { port: r.int(m, 'port', 'gateway.modbusTcp', 502, 1, 65535), allow, writes: m.writes === true, connectionsMax: r.int(m, 'connectionsMax', 'gateway.modbusTcp', 16, 1, 1024) } };
}
