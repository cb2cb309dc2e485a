// The config's objects, frozen, in shapes that do not depend on how they were built.
/**
 * A config frozen, each plain object and array in it a copy built key by key. V8 gives such a
 * copy a shape (hidden class) that depends only on its keys in order and their kinds of values,
 * not on how the original was built (the first object a literal makes has a shape of its own).
 * So a config spread from this one with some values replaced and passed through here (the
 * rehearsal's stage, node/http/rehearsal.ts) has the live config's shapes, and the code V8
 * compiled reading one is kept reading the other (test/unit/config-shapes.test.ts).
 */
export function frozenConfig<T>(o: T): T {
  if (Array.isArray(o)) return Object.freeze(o.map(frozenConfig)) as T;
  if (typeof o !== 'object' || o === null || Buffer.isBuffer(o) || o instanceof RegExp) return o;
  const proto: unknown = Object.getPrototypeOf(o);
  if (proto !== Object.prototype && proto !== null) return Object.freeze(o);
  const copy = Object.fromEntries(Object.entries(o).map(([k, v]) => [k, frozenConfig(v)]));
  return Object.freeze(proto === null ? Object.assign(Object.create(null), copy) : copy);
}
