// The dispatch link's I/O: one long-lived TCP connection from the master to each board, frames
// multiplexed by id (shared/dispatch-frame.ts). Writes made in one turn of the event loop leave
// in one syscall (corked until setImmediate). No HTTP client on the master, no HTTP parsing on
// the board for a forwarded request: the hop costs two small frames.
import type net from 'node:net';
import type { BoardConfig } from '../../shared/config.ts';
import { type AnswerFrame, type FrameCodec, type FrameError, FrameSplitter, LINK_MAGIC, type RequestFrame } from '../../shared/dispatch-frame.ts';
import { dialBoard, type TlsMaterial } from '../tls-material.ts';

/** `delivered`: the frame may have reached the board (it was written on an open connection). */
export type LinkResult = { ok: true; answer: AnswerFrame } | { ok: false; delivered: boolean; reason: string };

interface Waiter {
  done: (r: LinkResult) => void;
  delivered: boolean;
}

/**
 * Corks a socket until the end of this event-loop turn (setImmediate runs after every I/O callback
 * of the poll phase): the frames of every request read in one turn leave in one syscall.
 */
function batchWrite(sock: net.Socket, state: { corked: boolean }, buf: Buffer): void {
  if (!state.corked) {
    state.corked = true;
    sock.cork();
    setImmediate(() => {
      state.corked = false;
      sock.uncork();
    });
  }
  sock.write(buf);
}

class Connection {
  readonly sock: net.Socket;
  connected = false;
  closed = false;
  readonly waiting = new Map<number, Waiter>();
  private readonly splitter: FrameSplitter;
  private readonly batch = { corked: false };

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
    this.sock.on('close', () => this.fail('connection closed'));
  }

  send(id: number, frame: Buffer, done: (r: LinkResult) => void): void {
    this.waiting.set(id, { done, delivered: this.connected });
    batchWrite(this.sock, this.batch, frame);
  }

  write(frame: Buffer): void {
    if (!this.closed) batchWrite(this.sock, this.batch, frame);
  }

  private onData(chunk: Buffer): void {
    const frames = this.splitter.push(chunk);
    if (frames === 'oversized') {
      this.onDrop('oversized');
      return void this.sock.destroy();
    }
    for (const raw of frames) {
      const f = this.codec.decode(raw);
      if (typeof f === 'string' || f.type !== 'answer') {
        this.onDrop(typeof f === 'string' ? f : 'malformed');
        return void this.sock.destroy();
      }
      const w = this.waiting.get(f.id);
      if (!w) continue; // cancelled and already settled
      this.waiting.delete(f.id);
      w.done({ ok: true, answer: f });
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
    this.conn(frame.target).send(frame.id, this.codec.request(frame), done);
  }

  /** The client left: the board stops the work and answers at once; the answer is still awaited. */
  cancel(board: number, id: number): void {
    this.conns[board]?.write(this.codec.cancel(id));
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
  const batch = { corked: false };
  sock.setNoDelay(true);
  const onChunk = (chunk: Buffer): void => {
    const frames = splitter.push(chunk);
    if (frames === 'oversized') {
      handler.onDrop('oversized');
      return void sock.destroy();
    }
    for (const raw of frames) {
      const f = codec.decode(raw);
      if (typeof f === 'string' || f.type === 'answer') {
        handler.onDrop(typeof f === 'string' ? f : 'malformed');
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
        if (!sock.destroyed) batchWrite(sock, batch, codec.answer(a));
      });
      if (running.has(id)) running.set(id, c);
    }
  };
  sock.on('data', onChunk);
  sock.on('error', () => {});
  sock.on('close', () => {
    // The master is gone: nobody will read these answers.
    for (const c of running.values()) c?.cancel();
    running.clear();
  });
  if (rest.length > 0) onChunk(rest);
  sock.resume();
}
