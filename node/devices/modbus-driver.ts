// A Modbus device (RTU on a serial line, RTU frames over TCP, or Modbus TCP): read its points
// (planned into as few requests as the PDU allows), write a coil or a number (FC5, FC6, or FC16
// for a value of several registers), or relay a client's PDU as it is (the cluster's gateway).
// Every exchange goes through the port's worker: one at a time, a bounded queue.
import type { ModbusDevice, ModbusPoint } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import { planReads } from '../../shared/modbus-config.ts';
import { encodeRequest, exceptionText, parseReply, type Reply, type Request, writeEcho } from '../../shared/modbus-pdu.ts';
import { decodeNumber, encodeNumber } from '../../shared/modbus-values.ts';
import { readRtuReply, rtuFrame } from './modbus-rtu.ts';
import { mbapFrame, readMbapReply } from './modbus-tcp.ts';
import { type PortIO, withRetries } from './port-worker.ts';

export type PointValue = number | boolean;

const READ_FC = { coil: 1, discrete: 2, holding: 3, input: 4 } as const;

/** Each device's next MBAP transaction id. */
const transactions = new WeakMap<ModbusDevice, number>();

/** One request PDU to the device, framed as its driver frames it; the response PDU (an exception's too). */
async function exchangePdu(io: PortIO, dev: ModbusDevice, pdu: Buffer, retries: number): Promise<Buffer> {
  const fc = pdu[0]!;
  const mbap = dev.tcp?.framing === 'tcp';
  return withRetries(retries, () => {
    const tid = ((transactions.get(dev) ?? 0) + 1) & 0xffff;
    transactions.set(dev, tid);
    return io.transact<Buffer>(
      mbap ? mbapFrame(tid, dev.unitId, pdu) : rtuFrame(dev.unitId, pdu),
      (rx) => {
        const r = mbap ? readMbapReply(tid, dev.unitId, fc, rx) : readRtuReply(dev.unitId, fc, rx);
        return r.status === 'more' ? { more: true } : r.status === 'error' ? { error: r.message } : { value: Buffer.from(r.pdu) };
      },
      dev.timeoutMs,
    );
  });
}

async function exchange(io: PortIO, dev: ModbusDevice, req: Request): Promise<Reply> {
  // Writes set a value (FC5, 6, 16 are idempotent): retried as reads are, on a timeout or garbage.
  const pdu = await exchangePdu(io, dev, encodeRequest(req), dev.retries);
  const reply = parseReply(req, pdu);
  if ('error' in reply) throw new EwsError('DEVICE_ERROR', reply.error);
  if (reply.kind === 'exception') throw new EwsError('DEVICE_ERROR', exceptionText(reply.code));
  return reply;
}

/** A point's value from the registers (or bits) a read returned, `at` its offset in them. */
function valueAt(p: ModbusPoint, reply: Reply, at: number): PointValue | undefined {
  if (reply.kind === 'bits') return reply.values[at];
  if (reply.kind !== 'registers' || !p.format) return undefined;
  return decodeNumber(reply.values.slice(at, at + p.words), p.format);
}

export async function readModbus(io: PortIO, dev: ModbusDevice): Promise<Record<string, PointValue>> {
  const out: Record<string, PointValue> = {};
  for (const span of planReads(dev.points)) {
    const reply = await exchange(io, dev, { fc: READ_FC[span.kind], address: span.address, count: span.count });
    for (const p of dev.points) {
      if (p.kind !== span.kind || p.address < span.address || p.address + p.words > span.address + span.count) continue;
      const v = valueAt(p, reply, p.address - span.address);
      if (v !== undefined) out[p.name] = v;
    }
  }
  return out;
}

/** The registers that hold `value` for point `p`, or a 400 naming why not. */
export function registersFor(p: ModbusPoint, value: number): number[] {
  const regs = encodeNumber(value, p.format!);
  if (typeof regs === 'string') throw new EwsError('BAD_REQUEST', `point ${p.name}: ${regs}`);
  return regs;
}

export async function writeModbus(io: PortIO, dev: ModbusDevice, pointName: string, value: PointValue): Promise<PointValue> {
  const p = dev.points.find((x) => x.name === pointName)!;
  let req: Request;
  if (p.kind === 'coil') req = { fc: 5, address: p.address, value: Boolean(value) };
  else {
    const regs = registersFor(p, Number(value));
    req = regs.length === 1 ? { fc: 6, address: p.address, value: regs[0]! } : { fc: 16, address: p.address, values: regs };
  }
  const reply = await exchange(io, dev, req);
  const echo = writeEcho(req)!;
  if (reply.kind !== 'written' || reply.address !== echo.address || reply.value !== echo.value) throw new EwsError('DEVICE_ERROR', 'the device did not confirm the write');
  return p.kind === 'coil' ? Boolean(value) : p.format ? decodeNumber(req.fc === 6 ? [req.value] : (req as { values: number[] }).values, p.format) : Number(value);
}

/** A client's request PDU, sent as it is (the gateway): the device's response PDU, an exception's included. A write is not retried here: the client decides. */
export function relayModbus(io: PortIO, dev: ModbusDevice, pdu: Buffer, write: boolean): Promise<Buffer> {
  return exchangePdu(io, dev, pdu, write ? 0 : dev.retries);
}
