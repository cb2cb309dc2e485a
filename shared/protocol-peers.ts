// Which protocol version to write: the lowest that the boards heard lately speak, never above
// this release's. A board's version is the highest it has shown since its latest boot: the byte
// of each packet it sends (a board writes down to its slowest peer, so its packets alone may say
// less than it speaks) and the `protocol` its HEALTH states. A board silent for Tthreshold no
// longer holds the cluster down (an old board that left for good, or restarts on the new release).
import { PROTOCOL_OLDEST, PROTOCOL_VERSION } from './protocol.ts';

export class ProtocolPeers {
  private readonly speaks: number[];
  private readonly epochs: number[];
  private readonly heardAt: number[];

  constructor(
    boards: number,
    private readonly self: number,
    private readonly silentMs: number,
  ) {
    this.speaks = Array.from({ length: boards }, (_, i) => (i === self ? PROTOCOL_VERSION : 0));
    this.epochs = Array.from({ length: boards }, () => 0);
    this.heardAt = Array.from({ length: boards }, () => -Infinity);
  }

  /** A packet from `board` (its epoch, the version it was written in, the `protocol` its HEALTH states if it was one). */
  heard(board: number, epoch: number, version: number, stated: number | undefined, now: number): void {
    if (board === this.self) return;
    if (epoch > this.epochs[board]!) {
      // A new boot: what it spoke before says nothing of what it speaks now.
      this.epochs[board] = epoch;
      this.speaks[board] = 0;
    }
    const shown = stated !== undefined && Number.isInteger(stated) && stated >= version && stated <= 255 ? stated : version;
    this.speaks[board] = Math.max(this.speaks[board]!, shown);
    this.heardAt[board] = now;
  }

  /** The version to write now: the lowest spoken by a board heard within the silence limit, at least the oldest read here. */
  writing(now: number): number {
    let v = PROTOCOL_VERSION;
    for (let i = 0; i < this.speaks.length; i++) if (i !== this.self && now - this.heardAt[i]! <= this.silentMs) v = Math.min(v, this.speaks[i]!);
    return Math.max(v, PROTOCOL_OLDEST);
  }

  /** The highest version each board has shown (0: not heard since it booted); this board's own is PROTOCOL_VERSION. */
  versions(): number[] {
    return [...this.speaks];
  }
}

/** The version to open a dispatch link to a board in: the highest it has shown, or this release's when it speaks newer or was not heard yet (0). */
export const linkVersion = (shown: number): number => Math.max(PROTOCOL_OLDEST, Math.min(PROTOCOL_VERSION, shown || PROTOCOL_VERSION));
