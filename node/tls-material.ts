// HTTPS between clients and boards, and between boards: the PEM files named in `tls`, read once
// at start, and the client side of a board-to-board connection (TCP, or TLS verifying the peer
// against the cluster's CA: the board's address must be in the certificate).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { TlsConfig } from '../shared/config.ts';

export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer;
}

/** Reads and checks the files; the error names the config key. */
export function readTlsMaterial(c: TlsConfig): TlsMaterial {
  const read = (key: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (e) {
      throw new Error(`tls.${key}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  };
  const cert = read('certFile', c.certFile),
    key = read('keyFile', c.keyFile);
  const ca = c.caFile ? read('caFile', c.caFile) : cert;
  try {
    tls.createSecureContext({ cert, key, ca });
  } catch (e) {
    throw new Error(`tls: the certificate and key do not make a usable pair: ${(e as Error).message}`);
  }
  return { cert, key, ca };
}

/** A connection to a board's port; `ready` is the event after which a write is on its way. */
export function dialBoard(board: { address: string; httpPort: number }, t: TlsMaterial | undefined): { sock: net.Socket; ready: 'connect' | 'secureConnect' } {
  if (!t) return { sock: net.connect({ host: board.address, port: board.httpPort, noDelay: true }), ready: 'connect' };
  // The board's own certificate goes with it: the dispatch link takes only a board's.
  const sock = tls.connect({ host: board.address, port: board.httpPort, ca: t.ca, cert: t.cert, key: t.key, ...(net.isIP(board.address) ? {} : { servername: board.address }) });
  sock.setNoDelay(true);
  return { sock, ready: 'secureConnect' };
}

/** A keep-alive agent for HTTP(S) requests to boards, and the matching request function. */
export function boardAgent(t: TlsMaterial | undefined, opts: http.AgentOptions): { agent: http.Agent; request: typeof http.request } {
  if (!t) return { agent: new http.Agent(opts), request: http.request };
  return { agent: new https.Agent({ ...opts, ca: t.ca }), request: https.request };
}
