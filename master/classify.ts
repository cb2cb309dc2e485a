// Request classification: the first class (in priority order) with a matching rule wins;
// a request no rule matches falls into the lowest-priority class.
import type { ClassConfig, MatchRule } from '../shared/config.ts';

export interface Classifier {
  /** Index into the classes array the classifier was built from. */
  classify(method: string, path: string): number;
}

function matches(rule: MatchRule, method: string, path: string): boolean {
  if (rule.method !== undefined && rule.method !== method) return false;
  if (rule.pathPrefix !== undefined && !path.startsWith(rule.pathPrefix)) return false;
  if (rule.regex !== undefined && !rule.regex.test(path)) return false;
  return true;
}

export function createClassifier(classes: readonly ClassConfig[]): Classifier {
  const order = classes.map((c, i) => ({ c, i })).sort((a, b) => a.c.priority - b.c.priority || a.i - b.i);
  const fallback = order[order.length - 1]!.i;
  return {
    classify(method, path) {
      for (const { c, i } of order) if (c.match.some((m) => matches(m, method, path))) return i;
      return fallback;
    },
  };
}
