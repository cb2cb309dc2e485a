// UDP cluster protocol: a small binary format, HMAC-SHA256 over everything.
//
//  off size field
//    0    2 magic "EW"
//    2    1 version (2; see PROTOCOL_VERSION)
//    3    1 type (1 STATE, 2 ACK, 3 REPORT, 4 JOIN, 5 DEVICE, 6 IDEM, 7 REVOKE, 8 HEALTH, 9 LOG, 10 PROGRAMS, 11 HANDOVER)
//    4    8 cluster id = sha256(cluster.name)[0..8]
//   12    1 sender board index
//   13    4 term
//   17    6 epoch (ms; strictly larger on every boot of the sender)
//   23    4 sequence counter within the epoch
//   27    2 body length
//   29    n body
// 29+n   32 HMAC-SHA256(key, bytes 0..29+n)
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The protocol this release speaks. A board reads packets of its own version and of the one before
 * (PROTOCOL_OLDEST) and writes the lowest version its live peers speak, so a cluster half-way
 * through an upgrade is one cluster; a packet two versions apart is dropped ('version').
 * 1: the first. 2: the dispatch link opens with LINK_HELLO and its version (shared/dispatch-frame.ts);
 * HEALTH says the highest version its board speaks (`protocol`). Packets are laid out as in 1.
 */
export const PROTOCOL_VERSION = 2;
export const PROTOCOL_OLDEST = PROTOCOL_VERSION - 1;
const MAGIC0 = 0x45; // 'E'
const MAGIC1 = 0x57; // 'W'
export const HEADER_BYTES = 29;
export const TAG_BYTES = 32;
export const LINKNUM_MAX = 0xffff;

export type PacketType = 'STATE' | 'ACK' | 'REPORT' | 'JOIN' | 'DEVICE' | 'IDEM' | 'REVOKE' | 'HEALTH' | 'LOG' | 'PROGRAMS' | 'HANDOVER';
const TYPE_CODE: Record<PacketType, number> = { STATE: 1, ACK: 2, REPORT: 3, JOIN: 4, DEVICE: 5, IDEM: 6, REVOKE: 7, HEALTH: 8, LOG: 9, PROGRAMS: 10, HANDOVER: 11 };
const CODE_TYPE: readonly (PacketType | undefined)[] = [undefined, 'STATE', 'ACK', 'REPORT', 'JOIN', 'DEVICE', 'IDEM', 'REVOKE', 'HEALTH', 'LOG', 'PROGRAMS', 'HANDOVER'];

/** runstate: 1 running, 0 joining, -1 down (the paper's ∞). */
export type RunState = 1 | 0 | -1;

export interface StateBody {
  master: number;
  linknum: number[];
  runstate: RunState[];
  /** Boards an admin drained: they take no new work until undrained, whatever their runstate (absent: none). */
  drained?: boolean[];
}
/** REPORT: a node's keep-alive every heartbeat (id 0), carrying its load. (ACK, the same body, is decoded but no longer sent: a board's load rides on each dispatch answer.) */
export interface LoadBody {
  id: number;
  load: number;
}

export type Message =
  | { type: 'STATE'; sender: number; term: number; body: StateBody }
  | { type: 'ACK'; sender: number; term: number; body: LoadBody }
  | { type: 'REPORT'; sender: number; term: number; body: LoadBody }
  | { type: 'JOIN'; sender: number; term: number; body: Record<string, never> }
  /** A planned handover: the master asks board `to` to take over now (no Tmax wait). */
  | { type: 'HANDOVER'; sender: number; term: number; body: { to: number } }
  /** Application data for every board (device readings, idempotency records): a JSON object. */
  | { type: 'DEVICE' | 'IDEM' | 'REVOKE' | 'HEALTH' | 'LOG' | 'PROGRAMS'; sender: number; term: number; body: Record<string, unknown> };

export type AppMessage = Extract<Message, { type: 'DEVICE' | 'IDEM' | 'REVOKE' | 'HEALTH' | 'LOG' | 'PROGRAMS' }>;

export interface Envelope {
  epoch: number;
  counter: number;
}
/** A decoded packet's envelope and the protocol version it was written in. */
export interface ReadEnvelope extends Envelope {
  version: number;
}

export const DROP_REASONS = ['source', 'truncated', 'oversized', 'garbage', 'version', 'cluster', 'length', 'auth', 'sender', 'malformed', 'replay'] as const;
export type DropReason = (typeof DROP_REASONS)[number];

export type Decoded = { ok: true; msg: Message; env: ReadEnvelope } | { ok: false; reason: DropReason };

export function clusterId(name: string): Buffer {
  return createHash('sha256').update(`ews-cluster:${name}`).digest().subarray(0, 8);
}

export interface Codec {
  /** `version`: the protocol to write (PROTOCOL_OLDEST..PROTOCOL_VERSION; the layout is the same, the byte says which). */
  encode(msg: Message, env: Envelope, version?: number): Buffer;
  decode(buf: Buffer): Decoded;
}

/** `acceptKeys`: keys a packet may also be signed with (a key change under way); packets are always signed with `key`. */
export function createCodec(opts: { key: Buffer; acceptKeys?: readonly Buffer[]; cluster: string; boards: number; packetBytesMax: number }): Codec {
  const cid = clusterId(opts.cluster);
  const { key, boards, packetBytesMax } = opts;
  const accepted = opts.acceptKeys ?? [];
  if ([key, ...accepted].some((k) => k.length < 32)) throw new Error('cluster key must be at least 32 bytes');

  function encodeBody(msg: Message): Buffer {
    switch (msg.type) {
      case 'STATE': {
        const { master, linknum, runstate, drained } = msg.body;
        const n = linknum.length;
        // After the rows, the drained boards as a bitmask (board i: byte i >> 3, bit i & 7).
        const b = Buffer.alloc(2 + 3 * n + ((n + 7) >> 3));
        b.writeUInt8(master, 0);
        b.writeUInt8(n, 1);
        for (let i = 0; i < n; i++) {
          b.writeUInt16BE(Math.min(LINKNUM_MAX, Math.max(0, linknum[i]!)), 2 + 3 * i);
          b.writeInt8(runstate[i]!, 4 + 3 * i);
          if (drained?.[i]) b[2 + 3 * n + (i >> 3)]! |= 1 << (i & 7);
        }
        return b;
      }
      case 'ACK':
      case 'REPORT': {
        const b = Buffer.alloc(6);
        b.writeUInt32BE(msg.body.id >>> 0, 0);
        b.writeUInt16BE(Math.min(LINKNUM_MAX, Math.max(0, msg.body.load)), 4);
        return b;
      }
      case 'JOIN':
        return Buffer.alloc(0);
      case 'HANDOVER':
        return Buffer.from([msg.body.to]);
      case 'DEVICE':
      case 'IDEM':
      case 'REVOKE':
      case 'HEALTH':
      case 'LOG':
      case 'PROGRAMS':
        return Buffer.from(JSON.stringify(msg.body), 'utf8');
    }
  }

  function encode(msg: Message, env: Envelope, version = PROTOCOL_VERSION): Buffer {
    if (!(version >= PROTOCOL_OLDEST && version <= PROTOCOL_VERSION)) throw new Error(`protocol ${version} is not spoken here`);
    const body = encodeBody(msg);
    const buf = Buffer.alloc(HEADER_BYTES + body.length + TAG_BYTES);
    buf[0] = MAGIC0;
    buf[1] = MAGIC1;
    buf[2] = version;
    buf[3] = TYPE_CODE[msg.type];
    cid.copy(buf, 4);
    buf.writeUInt8(msg.sender, 12);
    buf.writeUInt32BE(msg.term >>> 0, 13);
    buf.writeUIntBE(env.epoch, 17, 6);
    buf.writeUInt32BE(env.counter >>> 0, 23);
    buf.writeUInt16BE(body.length, 27);
    body.copy(buf, HEADER_BYTES);
    tag(buf.subarray(0, HEADER_BYTES + body.length)).copy(buf, HEADER_BYTES + body.length);
    return buf;
  }

  function tag(data: Buffer, k: Buffer = key): Buffer {
    return createHmac('sha256', k).update(data).digest();
  }

  function signedByAny(data: Buffer, given: Buffer): boolean {
    if (timingSafeEqual(tag(data), given)) return true;
    for (const k of accepted) if (timingSafeEqual(tag(data, k), given)) return true;
    return false;
  }

  function decodeBody(type: PacketType, b: Buffer, sender: number, term: number): Message | undefined {
    switch (type) {
      case 'STATE': {
        if (b.length < 2) return undefined;
        const master = b.readUInt8(0);
        const n = b.readUInt8(1);
        // The drained mask after the rows is new: a STATE without it (a board of the release before) has none drained.
        const mask = b.length === 2 + 3 * n ? 0 : (n + 7) >> 3;
        if (n !== boards || b.length !== 2 + 3 * n + mask || master >= boards || master !== sender) return undefined;
        const linknum: number[] = [];
        const runstate: RunState[] = [];
        const drained: boolean[] = [];
        for (let i = 0; i < n; i++) {
          linknum.push(b.readUInt16BE(2 + 3 * i));
          const rs = b.readInt8(4 + 3 * i);
          if (rs !== 1 && rs !== 0 && rs !== -1) return undefined;
          runstate.push(rs);
          drained.push(mask > 0 && (b[2 + 3 * n + (i >> 3)]! & (1 << (i & 7))) !== 0);
        }
        return { type, sender, term, body: { master, linknum, runstate, drained } };
      }
      case 'ACK':
      case 'REPORT':
        if (b.length !== 6) return undefined;
        return { type, sender, term, body: { id: b.readUInt32BE(0), load: b.readUInt16BE(4) } };
      case 'JOIN':
        if (b.length !== 0) return undefined;
        return { type, sender, term, body: {} };
      case 'HANDOVER':
        if (b.length !== 1 || b[0]! >= boards) return undefined;
        return { type, sender, term, body: { to: b[0]! } };
      case 'DEVICE':
      case 'IDEM':
      case 'REVOKE':
      case 'HEALTH':
      case 'LOG':
      case 'PROGRAMS': {
        let body: unknown;
        try {
          body = JSON.parse(b.toString('utf8'));
        } catch {
          return undefined;
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
        return { type, sender, term, body: body as Record<string, unknown> };
      }
    }
  }

  function decode(buf: Buffer): Decoded {
    if (buf.length > packetBytesMax) return { ok: false, reason: 'oversized' };
    if (buf.length < HEADER_BYTES + TAG_BYTES) return { ok: false, reason: 'truncated' };
    if (buf[0] !== MAGIC0 || buf[1] !== MAGIC1) return { ok: false, reason: 'garbage' };
    if (buf[2]! < PROTOCOL_OLDEST || buf[2]! > PROTOCOL_VERSION) return { ok: false, reason: 'version' };
    if (!cid.equals(buf.subarray(4, 12))) return { ok: false, reason: 'cluster' };
    const bodyLen = buf.readUInt16BE(27);
    if (buf.length !== HEADER_BYTES + bodyLen + TAG_BYTES) return { ok: false, reason: 'length' };
    const signed = buf.subarray(0, HEADER_BYTES + bodyLen);
    if (!signedByAny(signed, buf.subarray(HEADER_BYTES + bodyLen))) return { ok: false, reason: 'auth' };
    // Past this point the packet was made by a holder of the key: malformed now means a bug or a config mismatch.
    const type = CODE_TYPE[buf[3]!];
    const sender = buf.readUInt8(12);
    if (sender >= boards) return { ok: false, reason: 'sender' };
    if (!type) return { ok: false, reason: 'malformed' };
    const msg = decodeBody(type, buf.subarray(HEADER_BYTES, HEADER_BYTES + bodyLen), sender, buf.readUInt32BE(13));
    if (!msg) return { ok: false, reason: 'malformed' };
    return { ok: true, msg, env: { epoch: buf.readUIntBE(17, 6), counter: buf.readUInt32BE(23), version: buf[2]! } };
  }

  return { encode, decode };
}
