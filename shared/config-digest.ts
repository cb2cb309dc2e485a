// A config's identity: a content hash of the file as JSON, keys in a canonical order, so two boards
// given the same config (however its keys were ordered or spaced) report the same digest, and any
// difference in content gives another. Pure.
import { createHash } from 'node:crypto';

/** JSON with every object's keys sorted: one text per content. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** SHA-256 of the canonical JSON, hex. */
export function configDigest(raw: unknown): string {
  return createHash('sha256').update(canonicalJson(raw)).digest('hex');
}
