// Modbus TCP: the MBAP framing (transaction id, protocol 0, length, unit id, then the PDU), pure,
// and a TCP connection shaped as a port (PortLike), so a Modbus TCP device goes through the same
// SerialLine (reconnected with bounded backoff, offline while it cannot connect) and PortWorker
// (one exchange at a time, a bounded queue, control before polls, late bytes discarded) as a
// serial device. One connection per device per board, kept open and reused.
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { PDU_BYTES_MAX, responseLength } from '../../shared/modbus-pdu.ts';
import type { FrameResult } from './modbus-rtu.ts';
import type { PortLike } from './serial-line.ts';

export const MBAP_BYTES = 7;

export function mbapFrame(tid: number, unit: number, pdu: Buffer): Buffer {
  const b = Buffer.alloc(MBAP_BYTES + pdu.length);
  b.writeUInt16BE(tid & 0xffff, 0);
  b.writeUInt16BE(0, 2);
  b.writeUInt16BE(pdu.length + 1, 4);
  b[6] = unit;
  pdu.copy(b, MBAP_BYTES);
  return b;
}

/** An MBAP frame's header: its transaction id, unit and PDU length, or why it is not one. */
export function readMbapHeader(buf: Buffer): { tid: number; unit: number; pduBytes: number } | 'more' | { error: string } {
  if (buf.length < MBAP_BYTES) return 'more';
  if (buf.readUInt16BE(2) !== 0) return { error: `protocol id ${buf.readUInt16BE(2)}, not Modbus (0)` };
  const len = buf.readUInt16BE(4);
  if (len < 2 || len - 1 > PDU_BYTES_MAX) return { error: `MBAP length ${len} out of bounds` };
  return { tid: buf.readUInt16BE(0), unit: buf[6]!, pduBytes: len - 1 };
}

/** The response PDU to function `fc` in transaction `tid` from `unit` at the start of `buf`. */
export function readMbapReply(tid: number, unit: number, fc: number, buf: Buffer): FrameResult {
  const h = readMbapHeader(buf);
  if (h === 'more') return { status: 'more' };
  if ('error' in h) return { status: 'error', message: h.error };
  if (h.tid !== tid) return { status: 'error', message: `reply to transaction ${h.tid}, expected ${tid}` };
  if (h.unit !== unit) return { status: 'error', message: `reply from unit ${h.unit}, expected ${unit}` };
  if (buf.length < MBAP_BYTES + h.pduBytes) return { status: 'more' };
  const pdu = buf.subarray(MBAP_BYTES, MBAP_BYTES + h.pduBytes);
  const len = responseLength(fc, pdu);
  if (typeof len !== 'number') return { status: 'error', message: len === 'more' ? 'reply shorter than its function says' : len.error };
  if (len !== pdu.length) return { status: 'error', message: `reply of ${pdu.length} bytes, its function says ${len}` };
  if (buf.length > MBAP_BYTES + h.pduBytes) return { status: 'error', message: `${buf.length - MBAP_BYTES - h.pduBytes} trailing bytes after the reply` };
  return { status: 'frame', pdu };
}

/** `tcp://host:port`, the path a Modbus TCP device's line goes by. */
export const tcpPath = (host: string, port: number): string => `tcp://${host}:${port}`;

/** A TCP connection to a device as a port: open connects (within `connectTimeoutMs`), close or a reset is the cable gone. */
export class TcpPort extends EventEmitter implements PortLike {
  private sock: net.Socket | undefined;
  isOpen = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly connectTimeoutMs: number,
  ) {
    super();
  }

  open(cb: (err: Error | null) => void): void {
    const s = net.connect({ host: this.host, port: this.port });
    this.sock = s;
    s.setNoDelay(true);
    s.setTimeout(this.connectTimeoutMs, () => s.destroy(new Error(`no connection to ${this.host}:${this.port} within ${this.connectTimeoutMs} ms`)));
    const failed = (err: Error) => {
      s.destroy();
      cb(err);
    };
    s.once('error', failed);
    s.once('connect', () => {
      s.off('error', failed);
      s.setTimeout(0);
      // A device that vanishes without a FIN is found by keep-alive probes, not only by timeouts.
      s.setKeepAlive(true, 5000);
      this.isOpen = true;
      s.on('data', (d: Buffer) => this.emit('data', d));
      s.on('error', (e: Error) => this.emit('error', e));
      s.on('close', () => {
        if (!this.isOpen) return;
        this.isOpen = false;
        this.emit('close', Object.assign(new Error('connection closed'), { disconnected: true }));
      });
      cb(null);
    });
  }

  write(data: Buffer, cb: (err: Error | null | undefined) => void): boolean {
    if (!this.sock || !this.isOpen) {
      cb(new Error('not connected'));
      return false;
    }
    return this.sock.write(data, cb);
  }

  /** The write's callback already came after the kernel took the bytes. */
  drain(cb: (err: Error | null) => void): void {
    cb(null);
  }

  /** Nothing is held below us: bytes that arrive late reach no transaction and are dropped by the worker. */
  flush(cb: (err: Error | null) => void): void {
    cb(null);
  }

  close(cb?: (err: Error | null) => void): void {
    this.isOpen = false;
    this.sock?.destroy();
    cb?.(null);
  }
}

/** The port factory for Modbus TCP devices: a path made by tcpPath. */
export function openTcpPort(path: string, connectTimeoutMs: number): PortLike {
  const m = /^tcp:\/\/(.+):(\d+)$/.exec(path);
  if (!m) throw new Error(`${path} is not a tcp://host:port`);
  return new TcpPort(m[1]!, Number(m[2]), connectTimeoutMs);
}
