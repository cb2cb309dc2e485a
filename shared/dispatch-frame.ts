// The dispatch link's wire format: how the master hands a request to a board and gets the answer
// back, over one long-lived TCP connection per board pair (on the board's HTTP port; the first
// byte, LINK_HELLO then the protocol version, or LINK_MAGIC for protocol 1, is not a letter, so no
// HTTP request starts with it; the master opens in the version the board speaks). Binary, length-prefixed,
// every frame tagged with HMAC-SHA256 (cluster key), so a frame cannot be forged or altered.
//
//   frame  = u32 length | u8 type | fields… | tag[16]          (length counts what follows it)
//   REQUEST (1): u32 id | u8 master | u32 term | u8 target | u48 target's boot epoch | u8 class | u8 level | u8 origin
//                | u16 method+url length | method ' ' url | u16 headers length | headers | u32 body length | body
//   ANSWER  (2): u32 id | u16 load | u16 status | u8 flags | u16 head length | head | u32 body length | body
//   CANCEL  (3): u32 id
//   BATCH   (4): frames of the types above, each without its tag | one tag for the whole batch
// Frames written in one turn of the event loop leave as one BATCH (one HMAC for all of them);
// a lone frame leaves as itself, with its own tag.
// Request headers are `name\0value\0…` (names lower-case). An answer's head is its header lines
// as HTTP writes them (`name: value\r\n`…, shared/header-lines.ts), made once on the board so the
// master copies them to its client without taking them apart. `load` is the board's count of
// requests in execution after this one: the paper's ACK/REPORT, carried on the answer at no extra
// packet. Flags: 1 = the board refused the frame without running it. Status 0: the board gave up
// mid-answer (the client's connection is dropped).
// A REQUEST names its target board and that board's boot epoch (the master learns it from the
// board's UDP packets): a frame replayed to another board, or to a restarted one, is refused.
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';

/** A link in protocol 1: the magic byte, then frames. */
export const LINK_MAGIC = 0xe5;
/** A link from protocol 2 on: this byte, the version (shared/protocol.ts), then frames. */
export const LINK_HELLO = 0xe6;

/** The bytes that open a link in protocol `version`. */
export const linkOpening = (version: number): Buffer => (version <= 1 ? Buffer.of(LINK_MAGIC) : Buffer.of(LINK_HELLO, version));
export const TAG_BYTES = 16;
const EPOCH_MAX = 2 ** 48 - 1;
const TYPE_REQUEST = 1;
const TYPE_ANSWER = 2;
const TYPE_CANCEL = 3;
const TYPE_BATCH = 4;
const FLAG_REFUSED = 1;

/** Who asked: a client through the master, or the cluster's own schedules and MQTT bridge. */
export const ORIGINS = ['client', 'schedule', 'mqtt'] as const;
export type Origin = (typeof ORIGINS)[number];

export interface RequestFrame {
  readonly id: number;
  readonly master: number;
  readonly term: number;
  readonly target: number;
  /** The target's boot epoch as the master knows it. */
  readonly epoch: number;
  readonly cls: number;
  readonly level: number;
  readonly origin: Origin;
  readonly method: string;
  readonly url: string;
  /** name, value, name, value… */
  readonly headers: readonly string[];
  readonly body: Buffer;
}
export interface AnswerFrame {
  readonly id: number;
  readonly load: number;
  /** 100-599, or 0 when the board gave up mid-answer. */
  readonly status: number;
  /** The board refused the frame without running it (a restart, a newer master): it may run elsewhere. */
  readonly refused: boolean;
  /** Header lines, `name: value\r\n` each (shared/header-lines.ts); no framing headers. */
  readonly head: Buffer;
  readonly body: Buffer;
}
export type Frame = ({ type: 'request' } & RequestFrame) | ({ type: 'answer' } & AnswerFrame) | { type: 'cancel'; id: number };
/** What a whole frame on the wire holds: one frame, or a batch of them. */
export type Sealed = Frame | { type: 'batch'; frames: Frame[] };

export type FrameError = 'oversized' | 'auth' | 'malformed';

function splitHeaders(b: Buffer): string[] | undefined {
  if (b.length === 0) return [];
  const s = b.toString('latin1');
  if (!s.endsWith('\0')) return undefined;
  const parts = s.slice(0, -1).split('\0');
  return parts.length % 2 === 0 ? parts : undefined;
}

/** A head is empty or ends a line (the board made it; a torn one would run into the master's own lines). */
const wholeLines = (head: Buffer): boolean => head.length === 0 || (head[head.length - 2] === 13 && head[head.length - 1] === 10);

export class FrameCodec {
  private readonly secret: KeyObject;
  /** Keys a frame may also be sealed with (a key change under way); frames are always sealed with `key`. */
  private readonly accepted: readonly KeyObject[];
  constructor(
    key: Buffer,
    readonly frameBytesMax: number,
    acceptKeys: readonly Buffer[] = [],
  ) {
    this.secret = createSecretKey(key);
    this.accepted = acceptKeys.map((k) => createSecretKey(k));
  }

  /** A request frame; `sealed` false: without its tag, for a batch (`sealBatch`). */
  request(f: RequestFrame, sealed = true): Buffer {
    // Method, target and headers are latin1 (one byte a character): written straight into the frame.
    const lineBytes = f.method.length + 1 + f.url.length;
    let headerBytes = 0;
    for (const h of f.headers) headerBytes += h.length + 1;
    if (lineBytes > 0xffff || headerBytes > 0xffff) throw new RangeError('header block over 64 KiB');
    const buf = this.alloc(TYPE_REQUEST, 19 + 2 + lineBytes + 2 + headerBytes + 4 + f.body.length, sealed);
    let o = 5;
    o = buf.writeUInt32BE(f.id >>> 0, o);
    o = buf.writeUInt8(f.master, o);
    o = buf.writeUInt32BE(f.term >>> 0, o);
    o = buf.writeUInt8(f.target, o);
    o = buf.writeUIntBE(Math.min(EPOCH_MAX, Math.max(0, f.epoch)), o, 6);
    o = buf.writeUInt8(f.cls, o);
    o = buf.writeUInt8(f.level, o);
    o = buf.writeUInt8(ORIGINS.indexOf(f.origin), o);
    o = buf.writeUInt16BE(lineBytes, o);
    o += buf.write(f.method, o, 'latin1');
    buf[o++] = 0x20;
    o += buf.write(f.url, o, 'latin1');
    o = buf.writeUInt16BE(headerBytes, o);
    for (const h of f.headers) {
      o += buf.write(h, o, 'latin1');
      buf[o++] = 0;
    }
    o = buf.writeUInt32BE(f.body.length, o);
    f.body.copy(buf, o);
    return sealed ? this.seal(buf) : buf;
  }

  answer(f: AnswerFrame, sealed = true): Buffer {
    const buf = this.alloc(TYPE_ANSWER, 9 + 2 + f.head.length + 4 + f.body.length, sealed);
    let o = 5;
    o = buf.writeUInt32BE(f.id >>> 0, o);
    o = buf.writeUInt16BE(Math.min(0xffff, Math.max(0, f.load)), o);
    o = buf.writeUInt16BE(f.status, o);
    o = buf.writeUInt8(f.refused ? FLAG_REFUSED : 0, o);
    o = this.chunk16(buf, o, f.head);
    o = buf.writeUInt32BE(f.body.length, o);
    f.body.copy(buf, o);
    return sealed ? this.seal(buf) : buf;
  }

  cancel(id: number, sealed = true): Buffer {
    const buf = this.alloc(TYPE_CANCEL, 4, sealed);
    buf.writeUInt32BE(id >>> 0, 5);
    return sealed ? this.seal(buf) : buf;
  }

  /** Untagged frames (`sealed` false) as one BATCH frame with one tag; one frame is sealed alone. */
  sealBatch(frames: readonly Buffer[]): Buffer {
    if (frames.length === 1) return this.sealOne(frames[0]!);
    let bytes = 0;
    for (const f of frames) bytes += f.length;
    const buf = this.alloc(TYPE_BATCH, bytes);
    let o = 5;
    for (const f of frames) o += f.copy(buf, o);
    return this.seal(buf);
  }

  /** Bytes a batch adds to the frames it holds. */
  static readonly BATCH_OVERHEAD = 5 + TAG_BYTES;

  /** One whole frame (length field included) into its fields; an error names why it was refused. */
  decode(buf: Buffer): Sealed | FrameError {
    if (buf.length > this.frameBytesMax) return 'oversized';
    if (buf.length < 5 + TAG_BYTES || buf.readUInt32BE(0) !== buf.length - 4) return 'malformed';
    const end = buf.length - TAG_BYTES;
    if (!this.sealedByAny(buf.subarray(0, end), buf.subarray(end))) return 'auth';
    try {
      if (buf[4] !== TYPE_BATCH) return this.fields(buf, 0, end) ?? 'malformed';
      const frames: Frame[] = [];
      for (let o = 5; o < end; ) {
        const next = o + 4 + buf.readUInt32BE(o);
        const f = next <= end && buf[o + 4] !== TYPE_BATCH ? this.fields(buf, o, next) : undefined;
        if (!f) return 'malformed';
        frames.push(f);
        o = next;
      }
      return frames.length > 0 ? { type: 'batch', frames } : 'malformed';
    } catch {
      return 'malformed'; // a read past the end: lengths that do not add up
    }
  }

  /** The frame at `start` (its length field) whose fields end at `end`; undefined if they do not fit it. */
  private fields(buf: Buffer, start: number, end: number): Frame | undefined {
    const type = buf[start + 4];
    let o = start + 5;
    if (type === TYPE_CANCEL) return o + 4 === end ? { type: 'cancel', id: buf.readUInt32BE(o) } : undefined;
    if (type === TYPE_REQUEST) {
      if (o + 21 > end) return undefined;
      const id = buf.readUInt32BE(o),
        master = buf[o + 4]!,
        term = buf.readUInt32BE(o + 5),
        target = buf[o + 9]!,
        epoch = buf.readUIntBE(o + 10, 6),
        cls = buf[o + 16]!,
        level = buf[o + 17]!,
        origin = ORIGINS[buf[o + 18]!];
      o += 19;
      const lineEnd = o + 2 + buf.readUInt16BE(o);
      if (lineEnd + 2 > end) return undefined;
      const line = buf.toString('latin1', o + 2, lineEnd);
      const headersEnd = lineEnd + 2 + buf.readUInt16BE(lineEnd);
      if (headersEnd + 4 > end) return undefined;
      const headers = splitHeaders(buf.subarray(lineEnd + 2, headersEnd));
      const bodyEnd = headersEnd + 4 + buf.readUInt32BE(headersEnd);
      const sp = line.indexOf(' ');
      if (bodyEnd !== end || !origin || !headers || sp < 1) return undefined;
      return { type: 'request', id, master, term, target, epoch, cls, level, origin, method: line.slice(0, sp), url: line.slice(sp + 1), headers, body: buf.subarray(headersEnd + 4, bodyEnd) };
    }
    if (type === TYPE_ANSWER) {
      if (o + 11 > end) return undefined;
      const id = buf.readUInt32BE(o),
        load = buf.readUInt16BE(o + 4),
        status = buf.readUInt16BE(o + 6),
        flags = buf[o + 8]!;
      o += 9;
      const headEnd = o + 2 + buf.readUInt16BE(o);
      if (headEnd + 4 > end) return undefined;
      const head = buf.subarray(o + 2, headEnd);
      const bodyEnd = headEnd + 4 + buf.readUInt32BE(headEnd);
      if (bodyEnd !== end || !wholeLines(head) || (status !== 0 && (status < 100 || status > 599)) || flags > FLAG_REFUSED) return undefined;
      return { type: 'answer', id, load, status, refused: flags === FLAG_REFUSED, head, body: buf.subarray(headEnd + 4, bodyEnd) };
    }
    return undefined;
  }

  private alloc(type: number, fieldBytes: number, tagged = true): Buffer {
    const total = 5 + fieldBytes + (tagged ? TAG_BYTES : 0);
    const buf = Buffer.allocUnsafe(total);
    buf.writeUInt32BE(total - 4, 0);
    buf.writeUInt8(type, 4);
    return buf;
  }

  private chunk16(buf: Buffer, o: number, part: Buffer): number {
    if (part.length > 0xffff) throw new RangeError('header block over 64 KiB');
    o = buf.writeUInt16BE(part.length, o);
    return o + part.copy(buf, o);
  }

  /** An untagged frame, tagged: copied with room for its tag. */
  private sealOne(frame: Buffer): Buffer {
    const buf = Buffer.allocUnsafe(frame.length + TAG_BYTES);
    frame.copy(buf, 0);
    buf.writeUInt32BE(buf.length - 4, 0);
    return this.seal(buf);
  }

  private seal(buf: Buffer): Buffer {
    const end = buf.length - TAG_BYTES;
    this.tag(buf.subarray(0, end)).copy(buf, end);
    return buf;
  }

  private tag(data: Buffer, secret: KeyObject = this.secret): Buffer {
    return createHmac('sha256', secret).update('ews-link\n').update(data).digest().subarray(0, TAG_BYTES);
  }

  private sealedByAny(data: Buffer, given: Buffer): boolean {
    if (timingSafeEqual(this.tag(data), given)) return true;
    for (const k of this.accepted) if (timingSafeEqual(this.tag(data, k), given)) return true;
    return false;
  }
}

/**
 * Splits a byte stream into whole frames. A frame inside one chunk is a view of it; the chunks of
 * one that spans several are kept as they came and joined once, when the last arrives (never
 * copied per chunk), so what a connection holds is what it sent, never what it claims. `push`
 * returns the frames completed by the chunk, or 'oversized' as soon as a frame's length prefix
 * declares more than the bound (the connection is then closed: nothing after it can be trusted).
 * `partial`: a frame has begun and not ended (the link's progress timeout runs meanwhile).
 */
export class FrameSplitter {
  private parts: Buffer[] = [];
  private held = 0;
  /** The length of the frame in progress (prefix included), once its prefix has arrived. */
  private need = 0;
  constructor(private readonly frameBytesMax: number) {}

  get partial(): boolean {
    return this.held > 0;
  }

  push(chunk: Buffer): Buffer[] | 'oversized' {
    if (this.held === 0) return this.split(chunk);
    this.parts.push(chunk);
    this.held += chunk.length;
    if (this.need === 0 && this.held >= 4) {
      const prefix = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, 4);
      this.need = prefix.readUInt32BE(0) + 4;
      if (this.need > this.frameBytesMax) return 'oversized';
    }
    if (this.need === 0 || this.held < this.need) return [];
    const buf = Buffer.concat(this.parts, this.held);
    this.parts = [];
    this.held = 0;
    this.need = 0;
    return this.split(buf);
  }

  /** Whole frames from the front of `buf`; what is left starts the next one. */
  private split(buf: Buffer): Buffer[] | 'oversized' {
    const out: Buffer[] = [];
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0) + 4;
      if (len > this.frameBytesMax) return 'oversized';
      if (buf.length < len) {
        this.need = len;
        break;
      }
      out.push(buf.subarray(0, len));
      buf = buf.subarray(len);
    }
    if (buf.length > 0) {
      this.parts = [buf];
      this.held = buf.length;
      if (buf.length < 4) this.need = 0;
    }
    return out;
  }
}
