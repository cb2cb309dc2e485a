// Modbus RTU framing, both sides, pure: bytes in, frames or errors out.
// Function codes: 1 read coils, 2 read discrete inputs, 3 read holding, 4 read input registers,
// 5 write single coil, 6 write single register. Exceptions: fc | 0x80, one code byte.
import type { RegisterKind } from '../../shared/device-config.ts';

export const READ_FC: Record<RegisterKind, number> = { coil: 1, discrete: 2, holding: 3, input: 4 };
export const WRITE_COIL = 5;
export const WRITE_REGISTER = 6;
export const FRAME_BYTES_MAX = 256; // the RTU limit

export function crc16(buf: Uint8Array, end = buf.length): number {
  let crc = 0xffff;
  for (let i = 0; i < end; i++) {
    crc ^= buf[i]!;
    for (let b = 0; b < 8; b++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

function withCrc(body: number[]): Buffer {
  const b = Buffer.alloc(body.length + 2);
  body.forEach((v, i) => {
    b[i] = v;
  });
  b.writeUInt16LE(crc16(b, body.length), body.length);
  return b;
}

export interface Request {
  unit: number;
  fc: number;
  address: number /** quantity (reads) or value (writes) */;
  arg: number;
}

export function encodeRequest(r: Request): Buffer {
  return withCrc([r.unit, r.fc, r.address >> 8, r.address & 0xff, (r.arg >> 8) & 0xff, r.arg & 0xff]);
}

export type Reply = { kind: 'bits'; values: boolean[] } | { kind: 'registers'; values: number[] } | { kind: 'written'; address: number; value: number } | { kind: 'exception'; code: number };

export const EXCEPTIONS: Record<number, string> = { 1: 'illegal function', 2: 'illegal data address', 3: 'illegal data value', 4: 'device failure', 5: 'acknowledge', 6: 'device busy' };

export type ParseResult = { status: 'more' } | { status: 'frame'; reply: Reply; length: number } | { status: 'error'; message: string };

/** The reply to `req` at the start of `buf`, if complete. Anything unexpected is an error, never a guess. */
export function parseReply(req: Request, buf: Buffer): ParseResult {
  if (buf.length < 2) return { status: 'more' };
  if (buf[0] !== req.unit) return { status: 'error', message: `reply from unit ${buf[0]}, expected ${req.unit}` };
  const fc = buf[1]!;
  let len: number;
  if (fc === (req.fc | 0x80)) len = 5;
  else if (fc !== req.fc) return { status: 'error', message: `reply with function ${fc}, expected ${req.fc}` };
  else if (fc <= 4) {
    if (buf.length < 3) return { status: 'more' };
    const want = fc <= 2 ? Math.ceil(req.arg / 8) : req.arg * 2;
    if (buf[2] !== want) return { status: 'error', message: `reply with ${buf[2]} data bytes, expected ${want}` };
    len = 5 + want;
  } else len = 8;
  if (buf.length < len) return { status: 'more' };
  if (buf.readUInt16LE(len - 2) !== crc16(buf, len - 2)) return { status: 'error', message: 'bad CRC' };
  if (buf.length > len) return { status: 'error', message: `${buf.length - len} trailing bytes after the reply` };
  if (fc & 0x80) return { status: 'frame', length: len, reply: { kind: 'exception', code: buf[2]! } };
  if (fc <= 2) {
    const values: boolean[] = [];
    for (let i = 0; i < req.arg; i++) values.push(((buf[3 + (i >> 3)]! >> (i & 7)) & 1) === 1);
    return { status: 'frame', length: len, reply: { kind: 'bits', values } };
  }
  if (fc <= 4) {
    const values: number[] = [];
    for (let i = 0; i < req.arg; i++) values.push(buf.readUInt16BE(3 + 2 * i));
    return { status: 'frame', length: len, reply: { kind: 'registers', values } };
  }
  return { status: 'frame', length: len, reply: { kind: 'written', address: buf.readUInt16BE(2), value: buf.readUInt16BE(4) } };
}

// ---- server side (simulators) ----

export type RequestParse = { status: 'more' } | { status: 'request'; req: Request; length: number } | { status: 'skip'; length: number };

/** A request at the start of `buf` (all supported requests are 8 bytes). Bad bytes are skipped one at a time. */
export function parseRequest(buf: Buffer): RequestParse {
  if (buf.length < 8) return { status: 'more' };
  if (buf.readUInt16LE(6) !== crc16(buf, 6)) return { status: 'skip', length: 1 };
  return { status: 'request', length: 8, req: { unit: buf[0]!, fc: buf[1]!, address: buf.readUInt16BE(2), arg: buf.readUInt16BE(4) } };
}

export function encodeReply(req: Request, reply: Reply): Buffer {
  switch (reply.kind) {
    case 'exception':
      return withCrc([req.unit, req.fc | 0x80, reply.code]);
    case 'bits': {
      const bytes = new Array<number>(Math.ceil(reply.values.length / 8)).fill(0);
      reply.values.forEach((v, i) => {
        if (v) bytes[i >> 3]! |= 1 << (i & 7);
      });
      return withCrc([req.unit, req.fc, bytes.length, ...bytes]);
    }
    case 'registers':
      return withCrc([req.unit, req.fc, reply.values.length * 2, ...reply.values.flatMap((v) => [(v >> 8) & 0xff, v & 0xff])]);
    case 'written':
      return withCrc([req.unit, req.fc, reply.address >> 8, reply.address & 0xff, (reply.value >> 8) & 0xff, reply.value & 0xff]);
  }
}

/** Group point reads into as few requests as possible: same kind, addresses close together. */
export function planReads(points: ReadonlyArray<{ kind: RegisterKind; address: number }>, gapMax = 8, spanMax = 64): Array<{ kind: RegisterKind; address: number; count: number }> {
  const out: Array<{ kind: RegisterKind; address: number; count: number }> = [];
  // Code-unit order, not localeCompare: that loads ICU's collation tables (3 MB of RSS) for four ASCII words.
  const sorted = [...points].sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.address - b.address));
  for (const p of sorted) {
    const last = out[out.length - 1];
    if (last && last.kind === p.kind && p.address - (last.address + last.count - 1) <= gapMax && p.address - last.address < spanMax) {
      last.count = Math.max(last.count, p.address - last.address + 1);
    } else out.push({ kind: p.kind, address: p.address, count: 1 });
  }
  return out;
}
