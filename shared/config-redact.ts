// A config as it may leave the cluster (GET /api/backup): every secret left out. Pure.

/** Keys whose values are secrets wherever they appear in a config. */
const SECRET_KEYS = new Set(['key', 'acceptKeys', 'passwordHash', 'pass', 'secret', 'nextKey']);

/** A deep copy of the raw config without its secrets (a URL's password is cut out too). */
export function redactConfig(raw: unknown): unknown {
  if (Array.isArray(raw)) return raw.map(redactConfig);
  if (typeof raw === 'string') return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:(secret)@');
  if (typeof raw !== 'object' || raw === null) return raw;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) if (!SECRET_KEYS.has(k)) out[k] = redactConfig(v);
  return out;
}
