// The dispatch link's I/O: one long-lived TCP connection from the master to each board, frames
// multiplexed by id (shared/dispatch-frame.ts). Frames written in one turn of the event loop leave
// at its end as one batch: one syscall and one HMAC for all of them. No HTTP client on the
// master, no HTTP parsing on the board for a forwarded request: the hop costs two small frames.
import type net from 'node:net';
import type { BoardConfig } from '../../shared/config.ts';
import { type AnswerFrame, type Frame, FrameCodec, type FrameError, FrameSplitter, LINK_MAGIC, type RequestFrame } from '../../shared/dispatch-frame.ts';
import { dialBoard, type TlsMaterial } from '../tls-material.ts';

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
  constructor(
    private readonly sock: net.Socket,
    private readonly codec: FrameCodec,
  ) {}

  add(frame: Buffer): void {
    if (this.frames.length > 0 && this.bytes + frame.length + FrameCodec.BATCH_OVERHEAD > this.codec.frameBytesMax) this.flush();
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
  readonly waiting = new Map<number, Waiter>();
  private readonly splitter: FrameSplitter;
  private readonly batch: FrameBatch;

  constructor(
    board: BoardConfig,
    private readonly codec: FrameCodec,
    connectTimeoutMs: number,
    private readonly onDrop: (reason: FrameError) => void,
    private readonly onGone: () => void,
    tls: TlsMaterial | undefined,
  ) {
    this.splitter = new FrameSplitter(codec.frameBytesMax);
    const { sock, ready } = dialBoard(board, tls);
    this.sock = sock;
    this.batch = new FrameBatch(sock, codec);
    this.sock.setTimeout(connectTimeoutMs, () => {
      if (!this.connected) this.sock.destroy(new Error('connect timeout'));
    });
    this.sock.write(Buffer.of(LINK_MAGIC));
    this.sock.on(ready, () => {
      this.connected = true;
      this.sock.setTimeout(0);
    });
    this.sock.on('data', (chunk: Buffer) => this.onData(chunk));
    this.sock.on('error', () => {});
    // The board closed its end (it exited or is stopping): nothing more is answered here. Failing
    // at its EOF, not at 'close' a loop iteration later, sends a request read in the same turn on
    // a fresh connection (refused: never ran, 503) instead of onto this one (may have run, 502).
    this.sock.on('end', () => {
      this.fail('connection closed');
      this.sock.destroy();
    });
    this.sock.on('close', () => this.fail('connection closed'));
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
    for (const w of this.waiting.values()) w.done({ ok: false, delivered: w.delivered && this.connected, reason });
    this.waiting.clear();
  }
}

/** The master's end: dispatch a request frame to a board, get its answer (or why not). */
export class DispatchClient {
  private readonly conns: (Connection | undefined)[];
  /** `tls`: the link runs inside TLS, the board verified against the cluster's CA. */
  constructor(
    private readonly boards: readonly BoardConfig[],
    private readonly codec: FrameCodec,
    private readonly connectTimeoutMs: number,
    private readonly onDrop: (reason: FrameError) => void,
    private readonly tls?: TlsMaterial,
  ) {
    this.conns = boards.map(() => undefined);
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
      this.boards[board]!,
      this.codec,
      this.connectTimeoutMs,
      this.onDrop,
      () => {
        if (this.conns[board] === fresh) this.conns[board] = undefined;
      },
      this.tls,
    );
    this.conns[board] = fresh;
    return fresh;
  }
}

export interface LinkRequestHandler {
  /** A verified frame (the caller checks its identity); answer once through `answer`. */
  onRequest(frame: RequestFrame, answer: (a: AnswerFrame) => void): { cancel(): void } | undefined;
  onDrop(reason: FrameError | 'refused'): void;
}

/** The board's end: a connection that began with LINK_MAGIC. `rest` is what followed the magic byte. */
export function serveLink(sock: net.Socket, rest: Buffer, codec: FrameCodec, handler: LinkRequestHandler, inFlightMax: number): void {
  const splitter = new FrameSplitter(codec.frameBytesMax);
  const running = new Map<number, { cancel(): void } | undefined>();
  const batch = new FrameBatch(sock, codec);
  sock.setNoDelay(true);
  const onChunk = (chunk: Buffer): void => {
    const frames = splitter.push(chunk);
    if (frames === 'oversized') {
      handler.onDrop('oversized');
      return void sock.destroy();
    }
    for (const raw of frames) {
      const fs = unpack(codec, raw);
      if (typeof fs === 'string') {
        handler.onDrop(fs);
        return void sock.destroy();
      }
      for (const f of fs) {
        if (f.type === 'answer') {
          handler.onDrop('malformed');
          return void sock.destroy();
        }
        if (f.type === 'cancel') {
          running.get(f.id)?.cancel();
          continue;
        }
        if (running.has(f.id) || running.size >= inFlightMax) {
          handler.onDrop('refused');
          return void sock.destroy();
        }
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
    // The master is gone: nobody will read these answers.
    for (const c of running.values()) c?.cancel();
    running.clear();
  });
  if (rest.length > 0) onChunk(rest);
  sock.resume();
}
