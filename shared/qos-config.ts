// The request classes and the QoS pipeline's settings, validated (part of parseConfig).
import { isObj, num, type Raw, type Reader } from './config-reader.ts';
import type { AdaptationConfig, AdmissionConfig, ClassConfig, LimitsConfig, MatchRule, QosConfig, QuotaConfig, SchedulerName } from './config-types.ts';
import { ipv4ToInt, isIPv4 } from './ipv4.ts';
import { linearRegExp } from './linear-regexp.ts';

export function readClasses(r: Reader, raw: Raw, limits: LimitsConfig): ClassConfig[] {
  const list = r.arr(raw, 'classes', '', false);
  if (!list) {
    return [
      {
        name: 'control',
        priority: 0,
        match: [{ pathPrefix: '/cgi-bin/' }],
        queueMax: limits.queueMax,
        deadlineMs: limits.requestTimeoutMs,
        weight: 1,
        share: 1,
        setQoS: 0,
        mk: undefined,
        targetMs: limits.requestTimeoutMs,
        standingWaitMs: Math.max(1, Math.round(limits.requestTimeoutMs / 2)),
      },
      {
        name: 'browse',
        priority: 1,
        match: [{ pathPrefix: '/' }],
        queueMax: limits.queueMax,
        deadlineMs: limits.requestTimeoutMs,
        weight: 1,
        share: 1,
        setQoS: 0,
        mk: undefined,
        targetMs: limits.requestTimeoutMs,
        standingWaitMs: undefined,
      },
    ];
  }
  if (list.length === 0 || list.length > 16) r.bad('classes', 'needs 1 to 16 classes');
  const out: ClassConfig[] = [];
  /** Per class read: whether standingWaitMs was left unset. */
  const unset: boolean[] = [];
  list.forEach((c, i) => {
    const p = `classes[${i}]`;
    if (!isObj(c)) {
      r.bad(p, 'must be an object');
      return;
    }
    // weight/mk/targetMs/share belong to the QoS pipeline and are accepted now so configs stay stable.
    r.noUnknown(c, p, ['name', 'priority', 'match', 'queueMax', 'deadlineMs', 'weight', 'mk', 'targetMs', 'share', 'setQoS', 'standingWaitMs']);
    const name = r.str(c, 'name', p);
    const priority = r.int(c, 'priority', p, i, 0, 99);
    const match: MatchRule[] = [];
    (r.arr(c, 'match', p, true) ?? []).forEach((m, j) => {
      const mp = `${p}.match[${j}]`;
      if (!isObj(m)) {
        r.bad(mp, 'must be an object');
        return;
      }
      r.noUnknown(m, mp, ['pathPrefix', 'method', 'regex', 'header', 'cookie', 'client']);
      const rule: { -readonly [K in keyof MatchRule]: MatchRule[K] } = {};
      if (m.header !== undefined) {
        const h = r.str(m, 'header', mp);
        const i = h.indexOf('=');
        rule.header = { name: (i < 0 ? h : h.slice(0, i)).trim().toLowerCase(), value: i < 0 ? undefined : h.slice(i + 1).trim() };
      }
      if (m.cookie !== undefined) rule.cookie = r.str(m, 'cookie', mp);
      if (m.client !== undefined) {
        const cm = /^(\d+\.\d+\.\d+\.\d+)\/(\d{1,2})$/.exec(r.str(m, 'client', mp));
        if (!cm || !isIPv4(cm[1]!) || Number(cm[2]) > 32) r.bad(`${mp}.client`, 'must be an IPv4 network, e.g. 10.0.0.0/8');
        else {
          const mask = Number(cm[2]) === 0 ? 0 : (~0 << (32 - Number(cm[2]))) >>> 0;
          rule.client = { net: (ipv4ToInt(cm[1]!) & mask) >>> 0, mask };
        }
      }
      if (m.pathPrefix !== undefined) rule.pathPrefix = r.str(m, 'pathPrefix', mp);
      if (m.method !== undefined) rule.method = r.str(m, 'method', mp).toUpperCase();
      if (m.regex !== undefined) {
        const re = linearRegExp(r.str(m, 'regex', mp));
        if (typeof re === 'string') r.bad(`${mp}.regex`, re);
        else rule.regex = re;
      }
      if (Object.keys(rule).length === 0 && m.regex === undefined) r.bad(mp, 'needs pathPrefix, method, regex, header, cookie or client');
      match.push(rule);
    });
    const deadlineMs = r.int(c, 'deadlineMs', p, limits.requestTimeoutMs, 1, 3_600_000);
    const weight = num(r, c, 'weight', p, 1, 0.001, 1000);
    let mk: { m: number; k: number } | undefined;
    if (c.mk !== undefined) {
      const v = c.mk;
      if (!Array.isArray(v) || v.length !== 2 || !v.every((x) => Number.isInteger(x)) || v[0] < 0 || v[1] < 1 || v[1] > 64 || v[0] > v[1]) r.bad(`${p}.mk`, 'must be [m, k] with 0 <= m <= k <= 64');
      else mk = { m: v[0] as number, k: v[1] as number };
    }
    unset.push(c.standingWaitMs === undefined);
    out.push({
      name,
      priority,
      match,
      queueMax: r.int(c, 'queueMax', p, limits.queueMax, 1, 1_000_000),
      deadlineMs,
      weight,
      share: num(r, c, 'share', p, weight, 0.001, 1000),
      setQoS: num(r, c, 'setQoS', p, 0, 0, 1),
      mk,
      targetMs: r.int(c, 'targetMs', p, deadlineMs, 1, 3_600_000),
      // Unset: half the deadline for the first class by priority (below), off for the others; 0: off.
      standingWaitMs: c.standingWaitMs === undefined ? undefined : r.int(c, 'standingWaitMs', p, 0, 0, deadlineMs) || undefined,
    });
  });
  // Device control (the first class by priority; the first listed among equals): a command that
  // waited half its deadline in a queue that stands is refused rather than run late.
  const first = classAtRank(out, 'first');
  const f = out[first];
  if (f && unset[first]) out[first] = { ...f, standingWaitMs: Math.max(1, Math.round(f.deadlineMs / 2)) };
  const names = new Set<string>();
  out.forEach((c, i) => {
    if (names.has(c.name)) r.bad(`classes[${i}].name`, `duplicate class "${c.name}"`);
    names.add(c.name);
  });
  return out;
}

/** The share of each board's slots kept for the first class (see docs/qos.md for the measurement behind it). */
export const HIGH_RESERVE_DEFAULT = 0.0625;
/** HIGH's wait budget: the reserve is waived while HIGH's recent longest wait is under it (docs/qos.md). */
export const HIGH_WAIT_DEFAULT_MS = 10;

export function readQos(r: Reader, raw: Raw, classes: readonly ClassConfig[]): QosConfig {
  const q = r.obj(raw, 'qos', '', ['scheduler', 'periodMs', 'historyK', 'dwfsBeta', 'admission', 'adaptation', 'quota', 'highReserve', 'highWaitMs', 'paceFill', 'standingMs'], false) ?? {};
  const scheduler = r.str(q, 'scheduler', 'qos', 'priority');
  if (!['priority', 'fifo', 'dwfs', 'weakly-hard', 'fpd'].includes(scheduler)) r.bad('qos.scheduler', 'must be "priority", "fifo", "dwfs", "weakly-hard" or "fpd"');
  const ad = r.obj(q, 'admission', 'qos', ['targetQueue', 'q0', 'q1', 'alpha', 'refuseAfterPeriods', 'reserveMax', 'probeGrowth'], false);
  const admission: AdmissionConfig | undefined = ad && {
    targetQueue: r.int(ad, 'targetQueue', 'qos.admission', 10, 0, 1_000_000),
    q0: num(r, ad, 'q0', 'qos.admission', 0.8, 0, 10),
    q1: num(r, ad, 'q1', 'qos.admission', -0.5, -10, 10),
    alpha: num(r, ad, 'alpha', 'qos.admission', 0.5, 0.01, 1),
    refuseAfterPeriods: r.int(ad, 'refuseAfterPeriods', 'qos.admission', 3, 1, 1000),
    reserveMax: r.int(ad, 'reserveMax', 'qos.admission', 200, 0, 1_000_000),
    probeGrowth: num(r, ad, 'probeGrowth', 'qos.admission', 1.25, 1, 4),
  };
  // The queue integrates admissions and target_in integrates the error: the loop's poles are the
  // roots of z² − (2 − q0)·z + (1 + q1), inside the unit circle (Jury) only if −2 < q1 < 0,
  // q0 + q1 > 0 and q0 − q1 < 4. A positive q1, as the paper's wording suggests, never settles.
  if (admission && !(admission.q1 > -2 && admission.q1 < 0 && admission.q0 + admission.q1 > 0 && admission.q0 - admission.q1 < 4))
    r.bad('qos.admission.q1', `with q0 ${admission.q0} and q1 ${admission.q1} the queue never settles: need −2 < q1 < 0, q0 + q1 > 0, q0 − q1 < 4 (e.g. q0 0.8, q1 −0.5)`);
  const aa = r.obj(q, 'adaptation', 'qos', ['levels', 'targetUtilization', 'k', 'a', 'b'], false);
  const adaptation: AdaptationConfig | undefined = aa && {
    levels: r.int(aa, 'levels', 'qos.adaptation', 3, 1, 9),
    targetUtilization: num(r, aa, 'targetUtilization', 'qos.adaptation', 0.85, 0.05, 1),
    k: num(r, aa, 'k', 'qos.adaptation', 1, 0.001, 100),
    a: num(r, aa, 'a', 'qos.adaptation', 0.002, 0, 10),
    b: num(r, aa, 'b', 'qos.adaptation', 0.000001, 0, 1),
  };
  if (adaptation && adaptation.levels !== 3) r.bad('qos.adaptation.levels', 'the site is built in 3 content levels');
  const qq = r.obj(q, 'quota', 'qos', ['gain'], false);
  const quota: QuotaConfig | undefined = qq && { gain: num(r, qq, 'gain', 'qos.quota', 0.5, 0.01, 5) };
  if (q.paceFill !== undefined && typeof q.paceFill !== 'boolean') r.bad('qos.paceFill', 'must be true or false');
  const qos: QosConfig = {
    scheduler: scheduler as SchedulerName,
    periodMs: r.int(q, 'periodMs', 'qos', 1000, 10, 600_000),
    historyK: r.int(q, 'historyK', 'qos', 20, 1, 4096),
    dwfsBeta: num(r, q, 'dwfsBeta', 'qos', 0.1, 0, 100),
    admission,
    adaptation,
    quota,
    highReserve: num(r, q, 'highReserve', 'qos', HIGH_RESERVE_DEFAULT, 0, 0.9),
    highWaitMs: r.int(q, 'highWaitMs', 'qos', HIGH_WAIT_DEFAULT_MS, 0, 60_000),
    paceFill: q.paceFill !== false,
    standingMs: r.int(q, 'standingMs', 'qos', 500, 10, 60_000),
  };
  if (scheduler === 'weakly-hard')
    classes.forEach((c, i) => {
      if (!c.mk) r.bad(`classes[${i}].mk`, 'is required by the weakly-hard scheduler, e.g. [3, 5]');
    });
  return qos;
}

/** The class of the highest priority (`first`; the first listed among equals) or the lowest (`last`): device control and pages, a CGI program's `control` or `page`. */
export function classAtRank(classes: readonly ClassConfig[], rank: 'first' | 'last'): number {
  let best = 0;
  for (let i = 1; i < classes.length; i++) {
    const d = classes[i]!.priority - classes[best]!.priority;
    if (rank === 'first' ? d < 0 : d >= 0) best = i;
  }
  return best;
}
