// The network a board talks through. Boards use the system's; the demo and the tests pass one
// whose cable they can pull (dev/cable.ts), so no cable hook lives in the runtime.
import dgram from 'node:dgram';

/** A UDP socket, as much of one as the cluster link uses. */
export interface UdpPort {
  bind(port: number, address: string): Promise<void>;
  setBroadcast(on: boolean): void;
  send(buf: Buffer, port: number, address: string, done: (err: Error | null) => void): void;
  /** `from`: the sender's address (checked before anything else, the HMAC included). */
  onMessage(fn: (buf: Buffer, size: number, from: string) => void): void;
  onError(fn: (err: Error) => void): void;
  close(): void;
}

export interface Transport {
  udp(reuseAddr: boolean): UdpPort;
  /** Whether a new TCP connection may be accepted now. */
  accepting(): boolean;
}

export function systemUdp(reuseAddr: boolean): UdpPort {
  // A larger receive queue (the kernel caps it at net.core.rmem_max): a burst of junk does not crowd out the STATEs behind it.
  // Every address a board sends to is an IPv4 literal (validated in the config): handed back at
  // once, where Node's default lookup defers each send to the next tick.
  const sock = dgram.createSocket({ type: 'udp4', reuseAddr, recvBufferSize: 4 << 20, lookup: (address, _family, done) => done(null, address, 4) });
  return {
    bind: (port, address) =>
      new Promise<void>((resolve, reject) => {
        sock.once('error', reject);
        sock.bind({ port, address }, () => {
          sock.off('error', reject);
          resolve();
        });
      }),
    setBroadcast: (on) => sock.setBroadcast(on),
    send: (buf, port, address, done) => sock.send(buf, port, address, (err) => done(err)),
    onMessage: (fn) => sock.on('message', (buf, rinfo) => fn(buf, rinfo.size, rinfo.address)),
    onError: (fn) => sock.on('error', fn),
    close: () => sock.close(),
  };
}

export const systemTransport: Transport = { udp: systemUdp, accepting: () => true };
