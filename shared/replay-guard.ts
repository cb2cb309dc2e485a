// Replay protection for UDP packets: per sender, (epoch, counter) must be new.
// A 32-packet sliding window (IPsec style) tolerates reordering on the LAN; anything older
// than the window, or seen before, is a replay. A larger epoch means the sender rebooted.
import type { Envelope } from './protocol.ts';

const WINDOW = 32;

interface SenderMark {
  epoch: number;
  top: number;
  seen: number /* bit i = top - i seen */;
}

export class ReplayGuard {
  private readonly marks: (SenderMark | undefined)[];
  constructor(senders: number) {
    this.marks = new Array<SenderMark | undefined>(senders).fill(undefined);
  }

  /** True if the packet is fresh (and records it); false if it is a replay. */
  accept(sender: number, env: Envelope): boolean {
    const m = this.marks[sender];
    if (!m || env.epoch > m.epoch) {
      this.marks[sender] = { epoch: env.epoch, top: env.counter, seen: 1 };
      return true;
    }
    if (env.epoch < m.epoch) return false;
    if (env.counter > m.top) {
      const shift = env.counter - m.top;
      m.seen = shift >= WINDOW ? 1 : ((m.seen << shift) | 1) >>> 0;
      m.top = env.counter;
      return true;
    }
    const back = m.top - env.counter;
    if (back >= WINDOW) return false;
    const bit = (1 << back) >>> 0;
    if ((m.seen & bit) !== 0) return false;
    m.seen = (m.seen | bit) >>> 0;
    return true;
  }
}
