// Modbus RTU device: read points (grouped), write a coil or a holding register.
import type { ModbusDevice, ModbusPoint } from '../../shared/device-config.ts';
import { EwsError } from '../../shared/errors.ts';
import { EXCEPTIONS, encodeRequest, parseReply, planReads, READ_FC, type Reply, type Request, WRITE_COIL, WRITE_REGISTER } from './modbus-rtu.ts';
import { type PortIO, withRetries } from './port-worker.ts';

export type PointValue = number | boolean;

async function exchange(io: PortIO, dev: ModbusDevice, req: Request): Promise<Reply> {
  const reply = await withRetries(dev.retries, () =>
    io.transact<Reply>(
      encodeRequest(req),
      (rx) => {
        const r = parseReply(req, rx);
        return r.status === 'more' ? { more: true } : r.status === 'error' ? { error: r.message } : { value: r.reply };
      },
      dev.timeoutMs,
    ),
  );
  if (reply.kind === 'exception') throw new EwsError('DEVICE_ERROR', `device refused: Modbus exception ${reply.code} (${EXCEPTIONS[reply.code] ?? 'unknown'})`);
  return reply;
}

const round = (v: number) => Math.round(v * 1e6) / 1e6;

export function fromRaw(p: ModbusPoint, raw: number): number {
  const v = p.signed && raw > 0x7fff ? raw - 0x10000 : raw;
  return round(v * p.scale);
}
export function toRaw(p: ModbusPoint, value: number): number {
  const raw = Math.round(value / p.scale);
  const lo = p.signed ? -0x8000 : 0,
    hi = p.signed ? 0x7fff : 0xffff;
  if (raw < lo || raw > hi) throw new EwsError('BAD_REQUEST', `${value} does not fit point ${p.name}`);
  return raw & 0xffff;
}

export async function readModbus(io: PortIO, dev: ModbusDevice): Promise<Record<string, PointValue>> {
  const out: Record<string, PointValue> = {};
  for (const span of planReads(dev.points)) {
    const reply = await exchange(io, dev, { unit: dev.unitId, fc: READ_FC[span.kind], address: span.address, arg: span.count });
    for (const p of dev.points) {
      if (p.kind !== span.kind || p.address < span.address || p.address >= span.address + span.count) continue;
      const i = p.address - span.address;
      if (reply.kind === 'bits') out[p.name] = reply.values[i]!;
      else if (reply.kind === 'registers') out[p.name] = fromRaw(p, reply.values[i]!);
    }
  }
  return out;
}

export async function writeModbus(io: PortIO, dev: ModbusDevice, pointName: string, value: PointValue): Promise<PointValue> {
  const p = dev.points.find((x) => x.name === pointName)!;
  const req: Request =
    p.kind === 'coil' ? { unit: dev.unitId, fc: WRITE_COIL, address: p.address, arg: value ? 0xff00 : 0 } : { unit: dev.unitId, fc: WRITE_REGISTER, address: p.address, arg: toRaw(p, Number(value)) };
  const reply = await exchange(io, dev, req);
  if (reply.kind !== 'written' || reply.address !== req.address || reply.value !== req.arg) throw new EwsError('DEVICE_ERROR', 'the device did not confirm the write');
  return p.kind === 'coil' ? Boolean(value) : fromRaw(p, req.arg);
}
