// One canonical request target at the edge: every later stage (the guard, the classifier, the
// master's routing, the executing board) sees the same path, so no spelling of a path can pass
// the guard as one thing and run as another. Anything not already canonical is refused (400):
// absolute-form and asterisk-form targets, backslashes, empty or dot segments, and
// percent-encoded dots, slashes and backslashes. Pure.

/** Why a target is refused, or undefined when it is canonical origin-form. */
export function nonCanonical(target: string): string | undefined {
  if (!target.startsWith('/')) return 'the request target must be a path (origin-form)';
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  if (path.includes('\\')) return 'backslash in the path';
  if (/%(2e|2f|5c)/i.test(path)) return 'percent-encoded dot, slash or backslash in the path';
  if (path.includes('//')) return 'empty path segment';
  if (/\/\.\.?(\/|$)/.test(path)) return 'dot segment in the path';
  return undefined;
}
