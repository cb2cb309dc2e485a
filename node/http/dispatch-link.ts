// The dispatch link's I/O: one long-lived TCP connection from the master to each board, frames
// multiplexed by id (shared/dispatch-frame.ts). Frames written in one turn of the event loop leave
// at its end as one batch: one syscall and one HMAC for all of them. No HTTP client on the
// master, no HTTP parsing on the board for a forwarded request: the hop costs two small frames.
import type net from 'node:net';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { type AnswerFrame, type Frame, FrameCodec, type FrameError, FrameSplitter, linkOpening, type RequestFrame } from '../../shared/dispatch-frame.ts';
import { PROTOCOL_OLDEST, PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { linkVersion } from '../../shared/protocol-peers.ts';
import { dialBoard, type TlsMaterial } from '../tls-material.ts';
import { IdTable } from './id-table.ts';

/** `delivered`: the frame may have reached the board (it was written on an open connection). */
export type LinkResult = { ok: true; answer: AnswerFrame } | { ok: false; delivered: boolean; reason: string };

interface Waiter {
  done: (r: LinkResult) => void;
  delivered: boolean;
}

/**
 * The untagged frames written to a socket in this turn of the event loop, sent when the turn ends
 * (setImmediate runs after every I/O callback of the poll phase) as one sealed batch, or earlier
 * when the next frame would take the batch past the frame bound.
 */
export class FrameBatch {
  private frames: Buffer[] = [];
  private bytes = 0;
  /** `bytesMax`: the largest batch the other end takes (requests to a board are bounded tighter than answers). */
  constructor(
    private readonly sock: net.Socket,
    private readonly codec: FrameCodec,
    private readonly bytesMax = codec.frameBytesMax,
  ) {}

  add(frame: Buffer): void {
    if (this.frames.length > 0 && this.bytes + frame.length + FrameCodec.BATCH_OVERHEAD > this.bytesMax) this.flush();
    if (this.frames.length === 0) setImmediate(this.flush);
    this.frames.push(frame);
    this.bytes += frame.length;
  }

  private readonly flush = (): void => {
    if (this.frames.length === 0) return;
    const frames = this.frames;
    this.frames = [];
    this.bytes = 0;
    if (!this.sock.destroyed) this.sock.write(this.codec.sealBatch(frames));
  };
}

/** The frames a whole frame on the wire holds, or why it was refused. */
function unpack(codec: FrameCodec, raw: Buffer): readonly Frame[] | FrameError {
  const f = codec.decode(raw);
  return typeof f === 'string' ? f : f.type === 'batch' ? f.frames : [f];
}

class Connection {
  readonly sock: net.Socket;
  connected = false;
  closed = false;
  readonly waiting = new IdTable<Waiter>();
  private readonly splitter: FrameSplitter;
  private readonly batch: FrameBatch;

  constructor(
    board: BoardConfig,
    private readonly codec: FrameCodec,
    connectTimeoutMs: number,
    private readonly onDrop: (reason: FrameError) => void,
    private readonly onGone: () => void,
    tls: TlsMaterial | undefined,
    requestBytesMax: number,
    /** The protocol version to open in: the board's, or this release's when it speaks newer. */
    version: number,
  ) {
    this.splitter = new FrameSplitter(codec.frameBytesMax);
    const { sock, ready } = dialBoard(board, tls);
    this.sock = sock;
    this.batch = new FrameBatch(sock, codec, requestBytesMax);
    this.sock.setTimeout(connectTimeoutMs, () => {
      if (!this.connected) this.sock.destroy(new Error('connect timeout'));
    });
    this.sock.write(linkOpening(version));
    this.sock.on(ready, () => {
      this.connected = true;
      // Idle links are closed here, well before the board's own idle limit, so neither end closes one a request is on its way over.
      this.sock.setTimeout(LINK_IDLE_MS / 2, () => {
        if (this.waiting.size === 0) this.sock.destroy();
      });
    });
    this.sock.on('data', (chunk: Buffer) => this.onData(chunk));
    let error = '';
    this.sock.on('error', (e: NodeJS.ErrnoException) => {
      error = `: ${e.code ?? e.message}`;
    });
    // The board closed its end (it exited or is stopping): nothing more is answered here. Failing
    // at its EOF, not at 'close' a loop iteration later, sends a request read in the same turn on
    // a fresh connection (refused: never ran, 503) instead of onto this one (may have run, 502).
    this.sock.on('end', () => {
      this.fail('the board closed the connection');
      this.sock.destroy();
    });
    this.sock.on('close', () => this.fail(`connection closed${error}`));
  }

  /** `frame` untagged: it leaves in this turn's batch. */
  send(id: number, frame: Buffer, done: (r: LinkResult) => void): void {
    this.waiting.set(id, { done, delivered: this.connected });
    this.batch.add(frame);
  }

  write(frame: Buffer): void {
    if (!this.closed) this.batch.add(frame);
  }

  private onData(chunk: Buffer): void {
    const frames = this.splitter.push(chunk);
    if (frames === 'oversized') {
      this.onDrop('oversized');
      return void this.sock.destroy();
    }
    for (const raw of frames) {
      const fs = unpack(this.codec, raw);
      if (typeof fs === 'string') {
        this.onDrop(fs);
        return void this.sock.destroy();
      }
      for (const f of fs) {
        if (f.type !== 'answer') {
          this.onDrop('malformed');
          return void this.sock.destroy();
        }
        const w = this.waiting.get(f.id);
        if (!w) continue; // cancelled and already settled
        this.waiting.delete(f.id);
        w.done({ ok: true, answer: f });
      }
    }
  }

  private fail(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this.onGone();
    // Frames written before the connection opened never reached the board.
    for (const w of this.waiting.all()) w.done({ ok: false, delivered: w.delivered && this.connected, reason });
    this.waiting.clear();
  }
}

/** The master's end: dispatch a request frame to a board, get its answer (or why not). */
export class DispatchClient {
  private readonly conns: (Connection | undefined)[];
  /** `tls`: the link runs inside TLS, the board verified against the cluster's CA. */
  /** `boards`: the boards as the running config has them (a rolling restart may move a board's port). */
  constructor(
    private readonly boards: () => readonly BoardConfig[],
    private readonly codec: FrameCodec,
    private readonly connectTimeoutMs: number,
    private readonly onDrop: (reason: FrameError) => void,
    private readonly requestBytesMax: number,
    /** The highest protocol version a board has shown (0: not heard yet): a link opens in it, or in this release's if lower. */
    private readonly protocolOf: (board: number) => number,
    private readonly tls?: TlsMaterial,
  ) {
    this.conns = boards().map(() => undefined);
  }

  send(frame: RequestFrame, done: (r: LinkResult) => void): void {
    this.conn(frame.target).send(frame.id, this.codec.request(frame, false), done);
  }

  /** The client left: the board stops the work and answers at once; the answer is still awaited. */
  cancel(board: number, id: number): void {
    this.conns[board]?.write(this.codec.cancel(id, false));
  }

  /** Drop every connection (step-down, a cable back, shutdown): their dispatches fail. */
  close(): void {
    for (const c of this.conns) c?.sock.destroy();
  }

  private conn(board: number): Connection {
    const c = this.conns[board];
    if (c && !c.closed) return c;
    const fresh = new Connection(
      this.boards()[board]!,
      this.codec,
      this.connectTimeoutMs,
      this.onDrop,
      () => {
        if (this.conns[board] === fresh) this.conns[board] = undefined;
      },
      this.tls,
      this.requestBytesMax,
      linkVersion(this.protocolOf(board)),
    );
    this.conns[board] = fresh;
    return fresh;
  }
}

export interface LinkRequestHandler {
  /** A verified frame (the caller checks its identity); answer once through `answer`. */
  onRequest(frame: RequestFrame, answer: (a: AnswerFrame) => void): { cancel(): void } | undefined;
  onDrop(reason: LinkDrop): void;
}

/** Why a link connection was closed: a bad frame, too many at once, not from a board, no certificate, silent or stalled, a protocol version not spoken here. */
export type LinkDrop = FrameError | 'refused' | 'stranger' | 'certificate' | 'hello' | 'stalled' | 'version';

/** A link that has carried nothing for this long is closed (the master closes its end at half of it). */
export const LINK_IDLE_MS = 600_000;

export interface LinkLimits {
  /** The largest frame a board takes: one request (its body, its headers and the frame's fields), or a batch of them. */
  requestBytesMax: number;
  /** The first frame must be whole and verified this soon after the magic byte, and every frame this soon after its first byte. */
  helloMs: number;
  /** Addresses the master may dial from: the boards'. */
  peers: ReadonlySet<string>;
  /** With TLS, the connection must have presented a certificate the cluster's CA signed. */
  certificate: boolean;
}

/** The link's limits from the config: a request frame is at most a body, a head and 2 KiB of fields. */
export function linkLimits(cfg: Pick<Config, 'limits' | 'boards'>, tls: boolean): LinkLimits {
  const l = cfg.limits;
  return { requestBytesMax: l.bodyBytesMax + l.headerBytesMax + 2048, helloMs: l.headersTimeoutMs, peers: new Set(cfg.boards.map((b) => b.address)), certificate: tls };
}

const peerAddress = (sock: net.Socket) => {
  const a = sock.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
};

/** The board's end: a connection that opened as a link (shared/dispatch-frame.ts) in protocol `version`. `rest` is what followed the opening. */
export function serveLink(sock: net.Socket, rest: Buffer, version: number, codec: FrameCodec, handler: LinkRequestHandler, inFlightMax: number, limits: LinkLimits): void {
  const drop = (reason: LinkDrop): void => {
    handler.onDrop(reason);
    sock.destroy();
  };
  if (version < PROTOCOL_OLDEST || version > PROTOCOL_VERSION) return void drop('version');
  if (!limits.peers.has(peerAddress(sock))) return void drop('stranger');
  if (limits.certificate && (sock as net.Socket & { authorized?: boolean }).authorized !== true) return void drop('certificate');
  const splitter = new FrameSplitter(limits.requestBytesMax);
  const running = new IdTable<{ cancel(): void } | undefined>();
  const batch = new FrameBatch(sock, codec);
  sock.setNoDelay(true);
  // Until a verified frame arrives, and while a frame is half-way: helloMs. Between frames: the idle limit.
  let greeted = false;
  let stall: NodeJS.Timeout | undefined = setTimeout(() => drop('hello'), limits.helloMs);
  sock.setTimeout(LINK_IDLE_MS, () => {
    if (running.size === 0) drop('stalled');
  });
  const onChunk = (chunk: Buffer): void => {
    const frames = splitter.push(chunk);
    if (frames === 'oversized') return void drop('oversized');
    if (greeted || frames.length > 0) {
      if (stall) clearTimeout(stall);
      stall = splitter.partial ? setTimeout(() => drop(greeted ? 'stalled' : 'hello'), limits.helloMs) : undefined;
    }
    for (const raw of frames) {
      const fs = unpack(codec, raw);
      if (typeof fs === 'string') return void drop(fs);
      greeted = true;
      for (const f of fs) {
        if (f.type === 'answer') return void drop('malformed');
        if (f.type === 'cancel') {
          running.get(f.id)?.cancel();
          continue;
        }
        if (running.has(f.id) || running.size >= inFlightMax) return void drop('refused');
        running.set(f.id, undefined);
        const id = f.id;
        const c = handler.onRequest(f, (a) => {
          if (!running.delete(id)) return;
          if (!sock.destroyed) batch.add(codec.answer(a, false));
        });
        if (running.has(id)) running.set(id, c);
      }
    }
  };
  sock.on('data', onChunk);
  sock.on('error', () => {});
  sock.on('end', () => sock.end());
  sock.on('close', () => {
    if (stall) clearTimeout(stall);
    // The master is gone: nobody will read these answers.
    for (const c of running.all()) c?.cancel();
    running.clear();
  });
  if (rest.length > 0) onChunk(rest);
  sock.resume();
}
