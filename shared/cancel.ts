// A cancellation flag for work a board runs for someone who may leave: one small object per
// request instead of an AbortController and its event target.
export interface Cancellation {
  readonly aborted: boolean;
  /** Called once when the work is cancelled (replaces any earlier callback). */
  onAbort(fn: () => void): void;
}

export class Cancel implements Cancellation {
  aborted = false;
  private fn: (() => void) | undefined;
  onAbort(fn: () => void): void {
    this.fn = fn;
  }
  cancel(): void {
    if (this.aborted) return;
    this.aborted = true;
    const fn = this.fn;
    this.fn = undefined;
    fn?.();
  }
}
