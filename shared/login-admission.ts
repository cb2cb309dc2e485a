// Which logins may wait for their password check (scrypt, one at a time, bounded): a flood from
// rotating addresses must not starve the people who use the cluster. Each source address has at
// most one check waiting or running; part of the room is kept for sources that have logged in
// successfully before (remembered, bounded). Pure: the caller says what happened.
export type LoginAdmit = 'ok' | 'source-busy' | 'full';

export class LoginAdmission {
  private readonly inCheck = new Set<string>();
  /** Sources that logged in successfully, least recent first. */
  private readonly known = new Set<string>();
  private strangers = 0;
  /** Checks strangers may hold at most: the rest of the room is kept for known sources. */
  readonly strangersMax: number;

  /** `room`: checks waiting or running at most (limits.loginsWaitingMax + the one running). */
  constructor(
    private readonly room: number,
    private readonly knownMax = 1024,
  ) {
    this.strangersMax = Math.max(1, room - Math.max(1, Math.floor(room / 2)));
  }

  admit(source: string): LoginAdmit {
    if (this.inCheck.has(source)) return 'source-busy';
    const known = this.known.has(source);
    if (this.inCheck.size >= this.room || (!known && this.strangers >= this.strangersMax)) return 'full';
    this.inCheck.add(source);
    if (!known) this.strangers++;
    return 'ok';
  }

  /** The check for `source` ended; `ok`: the password was right (the source is known from now on). */
  done(source: string, ok: boolean): void {
    if (!this.inCheck.delete(source)) return;
    if (!this.known.has(source)) this.strangers--;
    if (ok) {
      this.known.delete(source);
      this.known.add(source);
      if (this.known.size > this.knownMax) this.known.delete(this.known.values().next().value!);
    }
  }
}
