// Request classification: the first class (in priority order) with a matching rule wins;
// a request no rule matches falls into the lowest-priority class.
import type { IncomingHttpHeaders } from 'node:http';
import { type ClassConfig, ipv4ToInt, type MatchRule } from '../shared/config.ts';
import { isIPv4 } from '../shared/ipv4.ts';

export interface RequestFacts {
  method: string;
  path: string;
  headers?: IncomingHttpHeaders;
  client?: string;
}

export interface Classifier {
  /** Index into the classes array the classifier was built from. */
  classify(method: string, path: string, facts?: Partial<RequestFacts>): number;
}

function hasCookie(header: string | undefined, name: string): boolean {
  return header?.split(';').some((p) => p.trim().startsWith(`${name}=`)) === true;
}

function matches(rule: MatchRule, f: RequestFacts): boolean {
  if (rule.method !== undefined && rule.method !== f.method) return false;
  if (rule.pathPrefix !== undefined && !f.path.startsWith(rule.pathPrefix)) return false;
  if (rule.regex !== undefined && !rule.regex.test(f.path)) return false;
  if (rule.header !== undefined) {
    const v = f.headers?.[rule.header.name];
    const value = Array.isArray(v) ? v.join(',') : v;
    if (value === undefined || (rule.header.value !== undefined && value !== rule.header.value)) return false;
  }
  if (rule.cookie !== undefined && !hasCookie(typeof f.headers?.cookie === 'string' ? f.headers.cookie : undefined, rule.cookie)) return false;
  if (rule.client !== undefined) {
    const ip = (f.client ?? '').replace(/^::ffff:/, '');
    if (!isIPv4(ip) || (ipv4ToInt(ip) & rule.client.mask) >>> 0 !== rule.client.net) return false;
  }
  return true;
}

/**
 * The rules in priority order. A class, not an object literal per call: every classifier's
 * `classify` is then one function, so code V8 optimized for one (a node's rehearsal of the master's
 * path) still holds for another (the live master's), where a per-object closure deoptimizes on
 * "wrong call target".
 */
class RuleClassifier implements Classifier {
  private readonly order: readonly { c: ClassConfig; i: number }[];
  private readonly fallback: number;

  constructor(classes: readonly ClassConfig[]) {
    this.order = classes.map((c, i) => ({ c, i })).sort((a, b) => a.c.priority - b.c.priority || a.i - b.i);
    this.fallback = this.order[this.order.length - 1]!.i;
  }

  classify(method: string, path: string, facts: Partial<RequestFacts> = {}): number {
    const f: RequestFacts = { method, path, headers: facts.headers, client: facts.client };
    for (const { c, i } of this.order) if (c.match.some((m) => matches(m, f))) return i;
    return this.fallback;
  }
}

export function createClassifier(classes: readonly ClassConfig[]): Classifier {
  return new RuleClassifier(classes);
}
