// Modbus RTU framing, both sides, pure: a unit id, a PDU (shared/modbus-pdu.ts) and a CRC-16.
// The same frames travel over a serial line and, for a serial-to-Ethernet server, over TCP.
import { FC, PDU_BYTES_MAX, type Reply, type Request, encodeReply as replyPdu, encodeRequest as requestPdu, responseLength } from '../../shared/modbus-pdu.ts';

export const FRAME_BYTES_MAX = 256; // the RTU limit

export function crc16(buf: Uint8Array, end = buf.length): number {
  let crc = 0xffff;
  for (let i = 0; i < end; i++) {
    crc ^= buf[i]!;
    for (let b = 0; b < 8; b++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

/** A unit id and a PDU, framed: unit | pdu | CRC (low byte first). */
export function rtuFrame(unit: number, pdu: Buffer): Buffer {
  const b = Buffer.alloc(pdu.length + 3);
  b[0] = unit;
  pdu.copy(b, 1);
  b.writeUInt16LE(crc16(b, pdu.length + 1), pdu.length + 1);
  return b;
}

export type FrameResult = { status: 'more' } | { status: 'frame'; pdu: Buffer } | { status: 'error'; message: string };

/** The response PDU to function `fc` from `unit` at the start of `buf`, once whole and its CRC checked. */
export function readRtuReply(unit: number, fc: number, buf: Buffer): FrameResult {
  if (buf.length < 2) return { status: 'more' };
  if (buf[0] !== unit) return { status: 'error', message: `reply from unit ${buf[0]}, expected ${unit}` };
  const len = responseLength(fc, buf.subarray(1));
  if (len === 'more') return { status: 'more' };
  if (typeof len !== 'number') return { status: 'error', message: len.error };
  if (len > PDU_BYTES_MAX) return { status: 'error', message: 'reply longer than a PDU' };
  if (buf.length < len + 3) return { status: 'more' };
  if (buf.readUInt16LE(len + 1) !== crc16(buf, len + 1)) return { status: 'error', message: 'bad CRC' };
  if (buf.length > len + 3) return { status: 'error', message: `${buf.length - len - 3} trailing bytes after the reply` };
  return { status: 'frame', pdu: buf.subarray(1, len + 1) };
}

// ---- server side (simulators): the 8-byte requests of functions 1 to 6 ----

export type RequestParse = { status: 'more' } | { status: 'request'; unit: number; req: Request; length: number } | { status: 'skip'; length: number };

/** A request of function 1-6 at the start of `buf` (8 bytes each). Bad bytes are skipped one at a time. */
export function parseRtuRequest(buf: Buffer): RequestParse {
  if (buf.length < 8) return { status: 'more' };
  if (buf.readUInt16LE(6) !== crc16(buf, 6)) return { status: 'skip', length: 1 };
  const fc = buf[1]!,
    address = buf.readUInt16BE(2),
    arg = buf.readUInt16BE(4);
  const req: Request | undefined =
    fc >= FC.readCoils && fc <= FC.readInput
      ? { fc: fc as 1 | 2 | 3 | 4, address, count: arg }
      : fc === FC.writeCoil
        ? { fc: 5, address, value: arg === 0xff00 }
        : fc === FC.writeRegister
          ? { fc: 6, address, value: arg }
          : undefined;
  return req ? { status: 'request', unit: buf[0]!, req, length: 8 } : { status: 'skip', length: 1 };
}

export const rtuRequest = (unit: number, req: Request): Buffer => rtuFrame(unit, requestPdu(req));
export const rtuReply = (unit: number, fc: number, reply: Reply): Buffer => rtuFrame(unit, replyPdu(fc, reply));
