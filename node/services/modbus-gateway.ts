// The cluster's Modbus TCP gateway (gateway.modbusTcp), served by the master while it is master:
// an HMI or SCADA polls one address (the VIP) and reaches every device with a gatewayUnit, RTU or
// TCP, on whichever board can reach it, and a failover moves the gateway with the address. Each
// request enters the master's queue as a device request of its own (HIGH, after web control in
// arrival order, within the same bounds) through this board's own HTTP port, as schedules do:
// POST /cgi-bin/devices/{id}/modbus with the PDU; the board that runs it relays the PDU to the
// device and answers the device's response PDU. A write carries an idempotency key made of the
// client, its transaction and the PDU, so a client that sends it again after a failover gets the
// first answer, not a second write. Clients outside gateway.modbusTcp.allow are closed unread.
import { createHash } from 'node:crypto';
import net from 'node:net';
import type { Config } from '../../shared/config.ts';
import { allowed } from '../../shared/gateway-config.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import { encodeReply, isWrite, parseRequest } from '../../shared/modbus-pdu.ts';
import { MBAP_BYTES, mbapFrame, readMbapHeader } from '../devices/modbus-tcp.ts';
import type { Logger } from '../log.ts';
import type { Loopback } from './loopback.ts';

/** Requests one client connection may have in flight before its socket is paused. */
const IN_FLIGHT_PER_CONNECTION = 4;
/** A connection that sends nothing this long is closed (an HMI polls far more often). */
const IDLE_MS = 120_000;
/** While master, a listen that failed (the old master's port not yet free) is tried again this often. */
const LISTEN_RETRY_MS = 200;

/** The exception a client gets when the cluster's answer is an error (docs/http-api.md, the gateway). */
export function exceptionFor(status: number, code: string | undefined): number {
  if (code === 'QUEUE_FULL' || code === 'DEVICE_BUSY' || code === 'OVERLOADED' || code === 'QUEUE_TIMEOUT' || code === 'IDEMPOTENCY_STORE_FULL') return 6;
  if (status === 503 || status === 504 || code === 'BOARD_FAILED' || code === 'DISPATCH_TIMEOUT') return 11;
  if (status === 403) return 1;
  return 4;
}

export class ModbusGateway {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private master = false;
  private retry: NodeJS.Timeout | undefined;
  private readonly requests: Counter;
  private readonly refused: Counter;

  constructor(
    private readonly running: { readonly cfg: Config },
    private readonly log: Logger,
    metrics: Registry,
    private readonly headers: () => Record<string, string>,
    private readonly loopback: Loopback,
  ) {
    this.requests = metrics.counter('ews_gateway_requests_total', 'Modbus TCP gateway requests answered, by outcome (ok, or the exception code)');
    this.refused = metrics.counter('ews_gateway_connections_refused_total', 'Modbus TCP gateway connections closed unread, by reason');
  }

  /** Serve while master; stop (every client connection closed) on a step-down. */
  setMaster(master: boolean): void {
    this.master = master;
    if (master) this.listen();
    else this.stop();
  }

  close(): void {
    this.master = false;
    this.stop();
    this.loopback.close();
  }

  private listen(): void {
    const g = this.running.cfg.gateway.modbusTcp;
    if (!g || this.server || !this.master) return;
    const server = net.createServer({ pauseOnConnect: false }, (s) => this.accept(s));
    server.maxConnections = g.connectionsMax;
    server.on('error', (err) => {
      this.server = undefined;
      this.log.warn({ port: g.port, err: err.message }, 'Modbus gateway cannot listen yet; trying again');
      if (this.master) this.retry = setTimeout(() => this.listen(), LISTEN_RETRY_MS);
    });
    // Every address: the VIP moves to the master, and a client on the board's own address is the same client.
    server.listen(g.port, '0.0.0.0', () => this.log.info({ port: g.port }, 'Modbus gateway serving'));
    this.server = server;
  }

  private stop(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    this.server?.close();
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  private accept(s: net.Socket): void {
    const g = this.running.cfg.gateway.modbusTcp;
    const client = s.remoteAddress ?? '';
    if (!g || !allowed(client, g.allow)) {
      this.refused.inc({ reason: 'not allowed' });
      return void s.destroy();
    }
    this.sockets.add(s);
    s.setNoDelay(true);
    s.setTimeout(IDLE_MS, () => s.destroy());
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => {});
    let buf: Buffer = Buffer.alloc(0);
    let inFlight = 0;
    const pump = (): void => {
      while (inFlight < IN_FLIGHT_PER_CONNECTION) {
        const h = readMbapHeader(buf);
        if (h === 'more') break;
        if ('error' in h) {
          this.refused.inc({ reason: 'not Modbus TCP' });
          return void s.destroy();
        }
        if (buf.length < MBAP_BYTES + h.pduBytes) break;
        const pdu = Buffer.from(buf.subarray(MBAP_BYTES, MBAP_BYTES + h.pduBytes));
        buf = buf.subarray(MBAP_BYTES + h.pduBytes);
        inFlight++;
        void this.answer(client, h.tid, h.unit, pdu).then((reply) => {
          inFlight--;
          if (!s.destroyed) s.write(mbapFrame(h.tid, h.unit, reply));
          if (s.isPaused() && inFlight < IN_FLIGHT_PER_CONNECTION) s.resume();
          pump();
        });
      }
      if (inFlight >= IN_FLIGHT_PER_CONNECTION) s.pause();
    };
    s.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      // A frame's header says its length (at most 260 bytes): more than a few waiting is not a client.
      if (buf.length > 8 * 1024) return void s.destroy();
      pump();
    });
  }

  /** The response PDU for one client request. */
  private async answer(client: string, tid: number, unit: number, pdu: Buffer): Promise<Buffer> {
    const fc = pdu[0] ?? 0;
    const exception = (code: number) => {
      this.requests.inc({ outcome: `exception ${code}` });
      return encodeReply(fc, { kind: 'exception', code });
    };
    const cfg = this.running.cfg;
    const dev = cfg.devices.find((d) => d.driver !== 'line' && d.gatewayUnit === unit);
    if (!dev) return exception(10);
    const parsed = parseRequest(pdu);
    if ('exception' in parsed) return exception(parsed.exception);
    const write = isWrite(parsed.req);
    if (write && !cfg.gateway.modbusTcp?.writes) return exception(1);
    const hex = pdu.toString('hex');
    const headers = this.headers();
    if (write) headers['idempotency-key'] = `modbus-${createHash('sha256').update(`${client} ${unit} ${tid} ${hex}`).digest('hex').slice(0, 40)}`;
    const a = await this.loopback.post(`/cgi-bin/devices/${encodeURIComponent(dev.id)}/modbus`, JSON.stringify({ pdu: hex, client }), headers, cfg.limits.requestTimeoutMs);
    let body: { pdu?: unknown; error?: { code?: string } } = {};
    try {
      body = JSON.parse(a.body) as typeof body;
    } catch {
      /* not JSON: a failure, mapped below */
    }
    if (a.status === 200 && typeof body.pdu === 'string' && /^(?:[0-9a-f]{2}){2,253}$/.test(body.pdu)) {
      this.requests.inc({ outcome: 'ok' });
      return Buffer.from(body.pdu, 'hex');
    }
    return exception(exceptionFor(a.status, body.error?.code));
  }
}
