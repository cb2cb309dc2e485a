// A Modbus point's value and its registers, both ways, pure. A point is a coil or discrete input
// (a bit), or a number in 1, 2 or 4 registers: int16/uint16, int32/uint32, float32, float64.
// Registers are 16-bit words sent high byte first; a value over several words is sent high word
// first (`wordOrder` "big", the Modbus convention) or low word first ("little"); `byteSwap` swaps
// the two bytes inside each word (devices that send each word low byte first). The value is
// raw × scale + offset; a write inverts it and refuses a value the registers cannot hold exactly.

export const NUMBER_TYPES = ['int16', 'uint16', 'int32', 'uint32', 'float32', 'float64'] as const;
export type NumberType = (typeof NUMBER_TYPES)[number];
export type WordOrder = 'big' | 'little';

export interface NumberFormat {
  readonly type: NumberType;
  readonly wordOrder: WordOrder;
  readonly byteSwap: boolean;
  readonly scale: number;
  readonly offset: number;
}

/** Registers a value of `type` takes. */
export const WORDS: Record<NumberType, 1 | 2 | 4> = { int16: 1, uint16: 1, int32: 2, uint32: 2, float32: 2, float64: 4 };

const RANGE: Record<'int16' | 'uint16' | 'int32' | 'uint32', [number, number]> = { int16: [-0x8000, 0x7fff], uint16: [0, 0xffff], int32: [-0x80000000, 0x7fffffff], uint32: [0, 0xffffffff] };

/** The registers, as sent, into the value's bytes in big-endian order (and back: the mapping is its own inverse). */
function arrange(words: readonly number[], f: NumberFormat): Buffer {
  const n = words.length;
  const b = Buffer.alloc(2 * n);
  for (let i = 0; i < n; i++) {
    const w = words[f.wordOrder === 'big' ? i : n - 1 - i]! & 0xffff;
    const hi = w >> 8,
      lo = w & 0xff;
    b[2 * i] = f.byteSwap ? lo : hi;
    b[2 * i + 1] = f.byteSwap ? hi : lo;
  }
  return b;
}

function words(b: Buffer, f: NumberFormat): number[] {
  const n = b.length / 2;
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const hi = f.byteSwap ? b[2 * i + 1]! : b[2 * i]!;
    const lo = f.byteSwap ? b[2 * i]! : b[2 * i + 1]!;
    out[f.wordOrder === 'big' ? i : n - 1 - i] = (hi << 8) | lo;
  }
  return out;
}

function rawOf(b: Buffer, type: NumberType): number {
  switch (type) {
    case 'int16':
      return b.readInt16BE(0);
    case 'uint16':
      return b.readUInt16BE(0);
    case 'int32':
      return b.readInt32BE(0);
    case 'uint32':
      return b.readUInt32BE(0);
    case 'float32':
      return b.readFloatBE(0);
    case 'float64':
      return b.readDoubleBE(0);
  }
}

/** What a float32 holds, as people write it: 7 significant digits (3.1400001 reads 3.14). */
const float32Digits = (v: number): number => (Number.isFinite(v) ? Number(v.toPrecision(7)) : v);
/** Scaled integers: 9 decimals at most (0.1 × 215 is 21.5, not 21.500000000000004). */
const tidy = (v: number): number => Math.round(v * 1e9) / 1e9;

/** The value `registers` hold (as many as WORDS[type]). */
export function decodeNumber(registers: readonly number[], f: NumberFormat): number {
  const raw = rawOf(arrange(registers, f), f.type);
  if (f.type === 'float32') return float32Digits(raw * f.scale + f.offset);
  if (f.type === 'float64') return raw * f.scale + f.offset;
  return tidy(raw * f.scale + f.offset);
}

/** The registers that hold `value`, or why they cannot (out of range, or not a whole multiple of the scale). */
export function encodeNumber(value: number, f: NumberFormat): number[] | string {
  if (!Number.isFinite(value)) return `${value} is not a finite number`;
  const b = Buffer.alloc(2 * WORDS[f.type]);
  const exact = (value - f.offset) / f.scale;
  if (f.type === 'float32' || f.type === 'float64') {
    if (f.type === 'float32') {
      if (Math.abs(exact) > 3.4028234663852886e38) return `${value} is beyond a float32`;
      b.writeFloatBE(exact, 0);
    } else b.writeDoubleBE(exact, 0);
    const regs = words(b, f);
    const back = decodeNumber(regs, f);
    const same = f.type === 'float32' ? back === value : Math.abs(back - value) <= 1e-9 * Math.max(1, Math.abs(value));
    return same ? regs : `${value} does not survive the round trip through a ${f.type} (it reads back as ${back})`;
  }
  const raw = Math.round(exact);
  const [lo, hi] = RANGE[f.type];
  if (raw < lo || raw > hi) return `${value} is out of range for ${f.type} (scale ${f.scale}, offset ${f.offset}): ${tidy(lo * f.scale + f.offset)} to ${tidy(hi * f.scale + f.offset)}`;
  if (Math.abs(raw - exact) > 1e-6) return `${value} is not a whole multiple of the scale ${f.scale} from offset ${f.offset} (nearest: ${tidy(raw * f.scale + f.offset)})`;
  if (f.type === 'int16') b.writeInt16BE(raw, 0);
  else if (f.type === 'uint16') b.writeUInt16BE(raw, 0);
  else if (f.type === 'int32') b.writeInt32BE(raw, 0);
  else b.writeUInt32BE(raw, 0);
  return words(b, f);
}
