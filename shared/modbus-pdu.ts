// Modbus PDUs (function code and data, without the unit id or the framing), both sides, pure.
// Function codes: 1 read coils, 2 read discrete inputs, 3 read holding registers, 4 read input
// registers, 5 write one coil, 6 write one register, 15 write coils, 16 write registers. An
// exception is fc | 0x80 and one code byte. The RTU (node/devices/modbus-rtu.ts) and TCP (MBAP,
// node/devices/modbus-tcp.ts) framings wrap these; the cluster's gateway reads requests with them.

export const FC = { readCoils: 1, readDiscrete: 2, readHolding: 3, readInput: 4, writeCoil: 5, writeRegister: 6, writeCoils: 15, writeRegisters: 16 } as const;

/** What each exception code means (the Modbus application protocol, 7). */
export const EXCEPTIONS: Record<number, string> = {
  1: 'illegal function',
  2: 'illegal data address',
  3: 'illegal data value',
  4: 'server device failure',
  5: 'acknowledge',
  6: 'server device busy',
  8: 'memory parity error',
  10: 'gateway path unavailable',
  11: 'gateway target device failed to respond',
};
export const exceptionText = (code: number): string => `exception ${code}, ${EXCEPTIONS[code] ?? 'unknown'}`;

/** The PDU's limits: 125 registers or 2000 bits read, 123 registers or 1968 bits written at once. */
export const LIMITS = { readRegisters: 125, readBits: 2000, writeRegisters: 123, writeBits: 1968 } as const;
/** A PDU is at most 253 bytes. */
export const PDU_BYTES_MAX = 253;

export type Request =
  | { fc: 1 | 2 | 3 | 4; address: number; count: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; values: boolean[] }
  | { fc: 16; address: number; values: number[] };

export type Reply =
  | { kind: 'bits'; values: boolean[] }
  | { kind: 'registers'; values: number[] }
  /** A write's echo: the address and the value (5, 6) or the count (15, 16). */
  | { kind: 'written'; address: number; value: number }
  | { kind: 'exception'; code: number };

const packBits = (bits: readonly boolean[]): number[] => {
  const bytes = new Array<number>(Math.ceil(bits.length / 8)).fill(0);
  bits.forEach((v, i) => {
    if (v) bytes[i >> 3]! |= 1 << (i & 7);
  });
  return bytes;
};
const unpackBits = (b: Buffer, at: number, count: number): boolean[] => Array.from({ length: count }, (_, i) => ((b[at + (i >> 3)]! >> (i & 7)) & 1) === 1);
const u16 = (v: number): number[] => [(v >> 8) & 0xff, v & 0xff];

export function encodeRequest(r: Request): Buffer {
  switch (r.fc) {
    case 1:
    case 2:
    case 3:
    case 4:
      return Buffer.from([r.fc, ...u16(r.address), ...u16(r.count)]);
    case 5:
      return Buffer.from([5, ...u16(r.address), r.value ? 0xff : 0, 0]);
    case 6:
      return Buffer.from([6, ...u16(r.address), ...u16(r.value)]);
    case 15: {
      const bytes = packBits(r.values);
      return Buffer.from([15, ...u16(r.address), ...u16(r.values.length), bytes.length, ...bytes]);
    }
    case 16:
      return Buffer.from([16, ...u16(r.address), ...u16(r.values.length), 2 * r.values.length, ...r.values.flatMap(u16)]);
  }
}

/**
 * How long the response PDU to a request of function `fc` is, from its first bytes (`pdu`, what
 * has arrived): its length, 'more' when too little has arrived to say, or an error.
 */
export function responseLength(fc: number, pdu: Buffer): number | 'more' | { error: string } {
  if (pdu.length < 1) return 'more';
  const got = pdu[0]!;
  if (got === (fc | 0x80)) return 2;
  if (got !== fc) return { error: `reply with function ${got}, expected ${fc}` };
  if (fc >= 1 && fc <= 4) return pdu.length < 2 ? 'more' : 2 + pdu[1]!;
  if (fc === 5 || fc === 6 || fc === 15 || fc === 16) return 5;
  return { error: `function ${fc} is not one ews speaks` };
}

/** The reply to `req` in a whole response PDU; anything unexpected is an error, never a guess. */
export function parseReply(req: Request, pdu: Buffer): Reply | { error: string } {
  const fc = pdu[0];
  if (fc === (req.fc | 0x80) && pdu.length === 2) return { kind: 'exception', code: pdu[1]! };
  if (fc !== req.fc) return { error: `reply with function ${fc}, expected ${req.fc}` };
  if (req.fc <= 4) {
    const count = (req as { count: number }).count;
    const want = req.fc <= 2 ? Math.ceil(count / 8) : 2 * count;
    if (pdu[1] !== want || pdu.length !== 2 + want) return { error: `reply with ${pdu[1]} data bytes, expected ${want}` };
    if (req.fc <= 2) return { kind: 'bits', values: unpackBits(pdu, 2, count) };
    return { kind: 'registers', values: Array.from({ length: count }, (_, i) => pdu.readUInt16BE(2 + 2 * i)) };
  }
  if (pdu.length !== 5) return { error: `a write's reply of ${pdu.length} bytes, expected 5` };
  return { kind: 'written', address: pdu.readUInt16BE(1), value: pdu.readUInt16BE(3) };
}

/** The echo a write's reply must carry (address, then value or count). */
export function writeEcho(req: Request): { address: number; value: number } | undefined {
  switch (req.fc) {
    case 5:
      return { address: req.address, value: req.value ? 0xff00 : 0 };
    case 6:
      return { address: req.address, value: req.value };
    case 15:
    case 16:
      return { address: req.address, value: req.values.length };
    default:
      return undefined;
  }
}

// ---- the server side: the gateway reads clients' requests; simulators answer ----

/** A request PDU, checked (the exception code to answer when it is not one ews takes). */
export function parseRequest(pdu: Buffer): { req: Request } | { exception: number } {
  const fc = pdu[0];
  if (fc === undefined) return { exception: 1 };
  if (fc >= 1 && fc <= 6) {
    if (pdu.length !== 5) return { exception: 3 };
    const address = pdu.readUInt16BE(1),
      arg = pdu.readUInt16BE(3);
    if (fc <= 4) {
      const max = fc <= 2 ? LIMITS.readBits : LIMITS.readRegisters;
      if (arg < 1 || arg > max) return { exception: 3 };
      return { req: { fc: fc as 1 | 2 | 3 | 4, address, count: arg } };
    }
    if (fc === 5) return arg === 0xff00 || arg === 0 ? { req: { fc: 5, address, value: arg === 0xff00 } } : { exception: 3 };
    return { req: { fc: 6, address, value: arg } };
  }
  if (fc === 15 || fc === 16) {
    if (pdu.length < 6) return { exception: 3 };
    const address = pdu.readUInt16BE(1),
      count = pdu.readUInt16BE(3),
      bytes = pdu[5]!;
    const max = fc === 15 ? LIMITS.writeBits : LIMITS.writeRegisters;
    const want = fc === 15 ? Math.ceil(count / 8) : 2 * count;
    if (count < 1 || count > max || bytes !== want || pdu.length !== 6 + bytes) return { exception: 3 };
    if (fc === 15) return { req: { fc: 15, address, values: unpackBits(pdu, 6, count) } };
    return { req: { fc: 16, address, values: Array.from({ length: count }, (_, i) => pdu.readUInt16BE(6 + 2 * i)) } };
  }
  return { exception: 1 };
}

/** Whether a request changes the device (the gateway refuses these unless its `writes` is on). */
export const isWrite = (req: Request): boolean => req.fc === 5 || req.fc === 6 || req.fc === 15 || req.fc === 16;

export function encodeReply(fc: number, reply: Reply): Buffer {
  switch (reply.kind) {
    case 'exception':
      return Buffer.from([fc | 0x80, reply.code]);
    case 'bits': {
      const bytes = packBits(reply.values);
      return Buffer.from([fc, bytes.length, ...bytes]);
    }
    case 'registers':
      return Buffer.from([fc, 2 * reply.values.length, ...reply.values.flatMap(u16)]);
    case 'written':
      return Buffer.from([fc, ...u16(reply.address), ...u16(reply.value)]);
  }
}
