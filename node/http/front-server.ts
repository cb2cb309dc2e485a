// The board's listening socket. One port serves clients (HTTP) and the master's dispatch link:
// the first byte of a connection tells them apart (LINK_MAGIC is no letter). With TLS the port
// speaks TLS only, and the first byte is read inside it. HTTP limits are enforced here, and every
// open socket is known (a pulled cable in the demo drops them all).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import type { LimitsConfig } from '../../shared/config.ts';
import { LINK_HELLO, LINK_MAGIC } from '../../shared/dispatch-frame.ts';
import { EwsError } from '../../shared/errors.ts';
import type { Logger } from '../log.ts';
import type { TlsMaterial } from '../tls-material.ts';
import { sendError } from './http-io.ts';
import { LeanDeadlines, type LeanRoutes, serveLean } from './lean-connection.ts';

export interface FrontHandlers {
  request(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** A dispatch link: what followed its opening, and the protocol version it opened in (0: none given). */
  link(sock: Socket, rest: Buffer, version: number): void;
  /** False drops a new connection at once. */
  accept(): boolean;
  /** The lean intake for the requests the master queues (node/http/lean-connection.ts). */
  lean?: { leanAccepts(method: string, path: string): boolean; lean: LeanRoutes['handle'] };
}

export class FrontServer {
  private readonly http: http.Server;
  private readonly listener: net.Server | tls.Server;
  private readonly sockets = new Set<Socket>();

  constructor(l: LimitsConfig, h: FrontHandlers, log: Logger, secure?: TlsMaterial) {
    // Timeouts are checked by a sweep (Node's every connectionsCheckingInterval, 30 s by default;
    // the lean intake's by LeanDeadlines): a few times within the shortest limit.
    const checkEveryMs = Math.max(50, Math.min(1000, Math.floor(Math.min(l.headersTimeoutMs, l.keepAliveTimeoutMs) / 4)));
    this.http = http.createServer(
      {
        maxHeaderSize: l.headerBytesMax,
        headersTimeout: l.headersTimeoutMs,
        requestTimeout: l.headersTimeoutMs * 2,
        keepAliveTimeout: l.keepAliveTimeoutMs,
        connectionsCheckingInterval: checkEveryMs,
      },
      (req, res) => {
        h.request(req, res).catch((err: unknown) => {
          if (!(err instanceof EwsError)) log.error({ err }, 'request failed');
          sendError(res, err);
        });
      },
    );
    // Node's HTTP server ends a socket at the client's FIN unless told otherwise, dropping the answer to a request already read.
    (this.http as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    this.http.on('clientError', (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const body = JSON.stringify({
        error: {
          code: status === 431 ? 'HEADERS_TOO_LARGE' : 'BAD_REQUEST',
          message: status === 408 ? 'request took too long to arrive' : status === 431 ? 'request headers too large' : 'malformed HTTP request',
        },
      });
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    });
    const toHttp = (s: Socket, pending: Buffer): void => {
      if (pending.length > 0) s.unshift(pending);
      this.http.emit('connection', s);
      process.nextTick(() => s.resume());
    };
    const routes = h.lean;
    const deadlines = new LeanDeadlines(checkEveryMs);
    const lean: LeanRoutes | undefined = routes && { accepts: (m, p) => routes.leanAccepts(m, p), handle: (req, res, body, path) => routes.lean(req, res, body, path), handoff: toHttp };
    const track = (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    };
    const onSocket = (s: Socket) => {
      if (!h.accept()) return void s.destroy();
      track(s);
      s.on('error', () => {});
      s.setTimeout(l.headersTimeoutMs, () => s.destroy());
      // Closed by the client before it said anything: nothing to answer.
      const early = () => s.destroy();
      s.once('end', early);
      s.once('data', (chunk: Buffer) => {
        s.off('end', early);
        s.pause();
        s.setTimeout(0);
        if (chunk[0] === LINK_MAGIC) return h.link(s, chunk.subarray(1), 1);
        if (chunk[0] === LINK_HELLO) return h.link(s, chunk.subarray(2), chunk[1] ?? 0);
        if (lean) return serveLean(s, chunk, l, lean, deadlines);
        toHttp(s, chunk);
      });
      s.resume();
    };
    if (secure) {
      // A handshake that does not finish in headersTimeoutMs is dropped (slowloris on TLS).
      // A certificate is asked for (not required: browsers have none); the dispatch link takes only a connection that showed the cluster's.
      this.listener = tls.createServer(
        { cert: secure.cert, key: secure.key, ca: secure.ca, requestCert: true, rejectUnauthorized: false, handshakeTimeout: l.headersTimeoutMs, minVersion: 'TLSv1.2', allowHalfOpen: true },
        onSocket,
      );
      // Every connection is known from its first packet, the handshake included: a pulled cable or a stop drops them all.
      this.listener.on('connection', (s: Socket) => {
        s.setNoDelay(true);
        if (!h.accept()) return void s.destroy();
        track(s);
      });
    } else {
      // Half-open: a client that sends its request and closes its side still gets the answer.
      this.listener = net.createServer({ pauseOnConnect: true, noDelay: true, allowHalfOpen: true }, onSocket);
    }
    this.listener.maxConnections = l.connectionsMax;
  }

  listen(port: number, host: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.listener.once('error', reject);
      this.listener.listen(port, host, () => {
        this.listener.off('error', reject);
        // The HTTP server gets its connections from the listener and never listens itself; its
        // 'listening' event is what starts Node's headers/request timeout sweep (slowloris).
        this.http.emit('listening');
        resolve();
      });
    });
  }

  /** The port it listens on (the one the system picked, when asked for 0). */
  port(): number {
    return (this.listener.address() as net.AddressInfo).port;
  }

  /** Drop every open connection (a pulled cable). */
  dropAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  close(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.listener.close(() => resolve());
      this.dropAll();
      this.http.closeAllConnections();
      // Node's timeout sweep (started by 'listening' above) stops only when its server closes: a front
      // server that closes while its process goes on (a rehearsal's) would leave it running, holding the server.
      this.http.close();
    });
  }
}
