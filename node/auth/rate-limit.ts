// Login attempts per client and per user name: a token bucket each, bounded in how many it tracks.
// Pure: time is an argument.
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(
    private readonly burst: number,
    private readonly perMinute: number,
    private readonly keysMax = 10_000,
  ) {}

  /** Takes one token; returns 0 if allowed, else the seconds to wait. */
  take(key: string, nowMs: number): number {
    let b = this.buckets.get(key);
    if (b) {
      b.tokens = Math.min(this.burst, b.tokens + ((nowMs - b.at) / 60_000) * this.perMinute);
      b.at = nowMs;
    } else {
      if (this.buckets.size >= this.keysMax) this.buckets.delete(this.buckets.keys().next().value!);
      b = { tokens: this.burst, at: nowMs };
      this.buckets.set(key, b);
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 60) / this.perMinute);
  }
}
