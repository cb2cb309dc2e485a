// Reading raw JSON fields into typed values, collecting every problem as `path: problem` instead
// of stopping at the first: the config checks report everything at once.
import { nearMatch } from './near-match.ts';

export type Raw = Record<string, unknown>;
export const isObj = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys of earlier versions, and their names now: a config that uses one gets told the new name. */
const RENAMED: Readonly<Record<string, string>> = {
  maxHeaderBytes: 'headerBytesMax',
  maxBodyBytes: 'bodyBytesMax',
  maxQueue: 'queueMax',
  maxQueueBytes: 'queueBytesMax',
  maxInFlightPerBoard: 'inFlightPerBoardMax',
  maxConnections: 'connectionsMax',
  maxDispatchAttempts: 'dispatchAttemptsMax',
  forwardReplayWindow: 'dispatchReplayWindow',
  trees: 'levels',
};

/** Collects problems while reading fields; never throws until `done`. */
export class Reader {
  readonly problems: string[] = [];
  bad(path: string, problem: string): void {
    this.problems.push(`${path}: ${problem}`);
  }
  obj(parent: Raw, key: string, path: string, allowed: readonly string[], required = true): Raw | undefined {
    const v = parent[key];
    const p = path ? `${path}.${key}` : key;
    if (v === undefined) {
      if (required) this.bad(p, 'is required');
      return undefined;
    }
    if (!isObj(v)) return (this.bad(p, 'must be an object'), undefined);
    this.noUnknown(v, p, allowed);
    return v;
  }
  noUnknown(v: Raw, path: string, allowed: readonly string[]): void {
    for (const k of Object.keys(v)) {
      if (allowed.includes(k)) continue;
      const now = RENAMED[k];
      const near = nearMatch(k, allowed);
      this.bad(path ? `${path}.${k}` : k, now && allowed.includes(now) ? `was renamed ${now}` : near ? `unknown key (did you mean ${near}?)` : 'unknown key');
    }
  }
  str(o: Raw, key: string, path: string, def?: string): string {
    const v = o[key];
    if (v === undefined && def !== undefined) return def;
    if (typeof v !== 'string' || v.length === 0) return (this.bad(`${path}.${key}`, v === undefined ? 'is required' : 'must be a non-empty string'), def ?? '');
    return v;
  }
  int(o: Raw, key: string, path: string, def: number | undefined, min: number, max: number): number {
    const v = o[key];
    if (v === undefined && def !== undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v)) return (this.bad(`${path}.${key}`, v === undefined ? 'is required' : 'must be an integer'), def ?? min);
    if (v < min || v > max) return (this.bad(`${path}.${key}`, `must be between ${min} and ${max}`), def ?? min);
    return v;
  }
  arr(o: Raw, key: string, path: string, required: boolean): unknown[] | undefined {
    const v = o[key];
    if (v === undefined) {
      if (required) this.bad(`${path ? `${path}.` : ''}${key}`, 'is required');
      return undefined;
    }
    if (!Array.isArray(v)) return (this.bad(`${path ? `${path}.` : ''}${key}`, 'must be an array'), undefined);
    return v;
  }
}

/** A number in [min, max], `def` when absent. */
export function num(r: Reader, o: Raw, key: string, path: string, def: number, min: number, max: number): number {
  const v = o[key];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) return (r.bad(`${path}.${key}`, `must be a number from ${min} to ${max}`), def);
  return v;
}
