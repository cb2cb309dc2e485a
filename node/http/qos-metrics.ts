// The QoS controllers' state on /metrics: one metric per quantity, its unit in the name, the
// class as a label (promtool-clean). Only the quantities the configured pipeline has appear.
import type { Registry } from '../../shared/metrics.ts';

type Row = [Record<string, string>, number];

/** State key (as the dispatch core reports it) → metric name, help, and whether it counts up. */
const QUANTITIES: Record<string, [name: string, help: string, counter?: true]> = {
  virtualTime: ['ews_dwfs_virtual_time', 'DWFS virtual time (paper 004)'],
  weights: ['ews_dwfs_weight', 'DWFS weight per class, recomputed every period from its queue length'],
  absQoS: ['ews_fpd_abs_qos_ratio', 'FPD absolute QoS per class over the response-level log (paper 000)'],
  targets: ['ews_fpd_target_ratio', 'FPD target share per class'],
  proQoS: ['ews_pro_qos_ratio', 'Proportional QoS per class (FPD and weakly-hard)'],
  cf: ['ews_weakly_hard_critical_function', 'Weakly-hard critical function per class: misses left before the (m,k) constraint breaks (paper 002)'],
  promotions: ['ews_weakly_hard_promotions_total', 'Weakly-hard panic-mode promotions', true],
  targetIn: ['ews_admission_target_in', 'Admission target_in per class for this period (paper 000)'],
  p: ['ews_admission_probability', 'Admission probability per class'],
  q: ['ews_admission_queue_length', 'Queue length per class seen by admission control'],
  e: ['ews_admission_queue_error', 'Queue-length error per class (target minus actual)'],
  predicted: ['ews_admission_predicted_arrivals', 'Predicted arrivals per class for the next period'],
  reserve: ['ews_admission_reserve_length', 'Requests waiting in the reserve queue, per class'],
  G: ['ews_adaptation_level', 'Content adaptation level G (0 refuses pages, 3 is the full content level; papers 000/002)'],
  U: ['ews_adaptation_utilization_ratio', 'Measured utilisation U = a·R + b·W over the last period'],
  quotas: ['ews_quota_slots', 'Concurrency slots per class (paper 003)'],
  inflight: ['ews_inflight_requests', 'Requests running on boards, per class'],
  freeSlots: ['ews_free_slots', "Slots free on the boards that serve (qos.highReserve's count)"],
  reservedSlots: ['ews_high_reserve_slots', 'Free slots the classes after the first leave to it while it is active (qos.highReserve)'],
  highWaitS: ['ews_high_wait_seconds', "The first class's longest recent wait for a slot, decaying by e each second (the reserve is waived only while it is under qos.highWaitMs)"],
};

export function registerQosMetrics(metrics: Registry, state: () => Record<string, unknown>, classes: readonly string[]): void {
  const flat = (): Map<string, Row[]> => {
    const out = new Map<string, Row[]>();
    const add = (key: string, labels: Record<string, string>, v: unknown): void => {
      if (typeof v !== 'number' || !Number.isFinite(v)) return;
      const rows = out.get(key) ?? [];
      rows.push([labels, v]);
      out.set(key, rows);
    };
    for (const [k, v] of Object.entries(state())) {
      if (!Array.isArray(v)) add(k, {}, v);
      else
        v.forEach((x: unknown, i) => {
          const cls = { class: classes[i] ?? String(i) };
          if (x !== null && typeof x === 'object') for (const [kk, vv] of Object.entries(x)) add(kk, cls, vv);
          else add(k, cls, x);
        });
    }
    return out;
  };
  for (const key of flat().keys()) {
    const q = QUANTITIES[key];
    if (!q) continue;
    const read = (): Row[] => flat().get(key) ?? [];
    if (q[2]) metrics.counterOf(q[0], q[1], read);
    else metrics.gauge(q[0], q[1], read);
  }
}
