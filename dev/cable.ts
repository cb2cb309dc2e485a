// A board's network cable for the demo and the tests: pulled, nothing goes out and nothing comes
// in over UDP, and no TCP connection is accepted (the caller drops the open ones). The runtime
// knows nothing of it: it only gets a Transport.
import { systemUdp, type Transport, type UdpPort } from '../node/transport.ts';

export class Cable {
  pulled = false;

  readonly transport: Transport = {
    udp: (reuseAddr) => this.wrap(systemUdp(reuseAddr)),
    accepting: () => !this.pulled,
  };

  private wrap(port: UdpPort): UdpPort {
    return {
      ...port,
      send: (buf, p, address, done) => {
        if (this.pulled) return done(null); // on the floor, like a frame on an unplugged wire
        port.send(buf, p, address, done);
      },
      onMessage: (fn) =>
        port.onMessage((buf, size) => {
          if (!this.pulled) fn(buf, size);
        }),
    };
  }
}
