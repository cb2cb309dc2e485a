// The spread of a benchmark's samples: min, median, 90th percentile and max (the middle of an even count rounded down).
export function spread(xs: readonly number[]): { min: number; median: number; p90: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { min: s[0] ?? NaN, median: s[Math.floor((s.length - 1) / 2)] ?? NaN, p90: s[Math.floor(0.9 * (s.length - 1))] ?? NaN, max: s[s.length - 1] ?? NaN };
}
