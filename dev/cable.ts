// A board's network cable for the demo and the tests: pulled, nothing goes out and nothing comes
// in over UDP, and no TCP connection is accepted (the caller drops the open ones). The runtime
// knows nothing of it: it only gets a Transport. The UDP side lives in the cluster plane's thread
// (dev/cable-plane.ts); the two halves of one cable agree over a BroadcastChannel.
import { BroadcastChannel } from 'node:worker_threads';
import { systemUdp, type Transport, type UdpPort } from '../node/cluster-plane/transport.ts';

export const CABLE_CHANNEL = 'ews-dev-cable';

export class Cable {
  private state = false;
  private readonly channel = new BroadcastChannel(CABLE_CHANNEL);

  /** `follow`: this half only listens to the other (the plane's side). */
  constructor(follow = false) {
    if (follow) this.channel.onmessage = (e) => (this.state = Boolean((e as { data: unknown }).data));
    this.channel.unref();
  }

  get pulled(): boolean {
    return this.state;
  }
  set pulled(v: boolean) {
    this.state = v;
    this.channel.postMessage(v);
  }

  readonly transport: Transport = { udp: (reuseAddr) => this.wrap(systemUdp(reuseAddr)), accepting: () => !this.state };

  private wrap(port: UdpPort): UdpPort {
    return {
      ...port,
      send: (buf, p, address, done) => {
        if (this.state) return done(null); // on the floor, like a frame on an unplugged wire
        port.send(buf, p, address, done);
      },
      onMessage: (fn) =>
        port.onMessage((buf, size, from) => {
          if (!this.state) fn(buf, size, from);
        }),
    };
  }
}
