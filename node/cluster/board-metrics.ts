// The board's own gauges on /metrics: role, term, the table as it sees it, event-loop delay,
// device actions, idempotency records, memory.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Registry } from '../../shared/metrics.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import type { DeviceManager } from '../devices/device-manager.ts';
import type { Handlers } from '../exec/handlers.ts';
import type { EventsHub } from '../http/events-hub.ts';
import type { IdempotentExecutor } from '../idempotency/idempotent-exec.ts';
import type { BoardState } from '../state/board-state.ts';
import type { ClusterView } from './cluster-view.ts';

/** Registers the gauges; returns a stop function (the event-loop delay monitor). */
export function boardMetrics(
  metrics: Registry,
  mirror: ClusterMirror,
  view: () => ClusterView,
  devices: DeviceManager,
  idem: IdempotentExecutor,
  state: BoardState,
  hub: EventsHub,
  handlers: Handlers,
): () => void {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  metrics.gauge('ews_role', "This board's role (1 for the current one)", () => [[{ role: mirror.role }, 1]]);
  metrics.gauge('ews_term', 'Election term this board follows', () => [[{}, mirror.term]]);
  metrics.gauge('ews_linknum', "Connections per board, as this board's table says", () => view().boards.map((b) => [{ board: b.id }, b.linknum]));
  metrics.gauge('ews_runstate', 'Run state per board (1 running, 0 joining, -1 down)', () => view().boards.map((b) => [{ board: b.id }, b.runstate]));
  metrics.gauge('ews_event_loop_delay_seconds', 'Event loop delay since start', () => [
    [{ q: 'p99' }, loopDelay.percentile(99) / 1e9],
    [{ q: 'max' }, loopDelay.max / 1e9],
  ]);
  metrics.counterOf('ews_device_actions_total', 'Actions this board ran on its devices', () => [...devices.actionCounts].map(([k, v]) => [{ device: k.split(' ')[0]!, action: k.split(' ')[1]! }, v]));
  metrics.gauge('ews_idempotency_keys', 'Idempotency-Key records held', () => [[{}, idem.store.size]]);
  metrics.gauge('ews_idempotency_keys_max', 'Live Idempotency-Key records a board admits new keys up to (limits.idempotencyKeysMax)', () => [[{}, idem.store.countMax]]);
  metrics.counterOf('ews_idempotency_refused_total', 'New keyed commands refused (503 IDEMPOTENCY_STORE_FULL) because every record held was live', () => [[{}, idem.store.refused]]);
  metrics.counterOf('ews_idempotency_dropped_total', "Peers' records not kept: even their room (2 × the bound) was full of live ones", () => [[{}, idem.store.dropped]]);
  metrics.counterOf('ews_state_written_bytes_total', "Bytes this board's journals wrote to its stateDir since boot (flash wear)", () => [[{}, state.bytesWritten()]]);
  metrics.gauge('ews_sse_streams', 'Event streams open on this board', () => [[{}, hub.size]]);
  metrics.counterOf('ews_sse_closed_behind_total', 'Event streams closed because their client fell more than limits.sseBytesMax behind', () => [[{}, hub.closedBehind]]);
  metrics.counterOf('ews_abandoned_work_seconds_total', 'Work done for clients that had already gone', () => [[{}, handlers.wastedMs / 1000]]);
  metrics.gauge('ews_rss_bytes', 'Resident set size', () => [[{}, process.memoryUsage.rss()]]);
  metrics.gauge('ews_heap_bytes', 'V8 heap and external memory', () => {
    const m = process.memoryUsage();
    return [
      [{ kind: 'used' }, m.heapUsed],
      [{ kind: 'total' }, m.heapTotal],
      [{ kind: 'external' }, m.external + m.arrayBuffers],
    ];
  });
  return () => loopDelay.disable();
}
