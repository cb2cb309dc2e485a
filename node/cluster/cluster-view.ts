// The state table as this board sees it, for /api/cluster, SSE, MQTT and the UI.
import type { Config } from '../../shared/config.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { progressView, type RolloutProgress } from '../upgrade/upgrade-rollout.ts';
import type { BoardHealth, HealthBook } from './board-health.ts';

export interface ClusterView {
  cluster: string;
  master: string | null;
  term: number;
  boards: Array<{
    id: string;
    address: string;
    url: string;
    linknum: number;
    runstate: number;
    role: 'master' | 'node';
    /** Drained by an admin: up, but given no new work until undrained. */
    drained: boolean;
    durable: boolean | null;
    /** The config the board reports it runs (null until its health is heard). */
    configVersion: number | null;
    configHash: string | null;
    health: BoardHealth | null;
  }>;
  /** The rollout under way or the last one this board ran as master (null: none). */
  upgrade: ReturnType<typeof progressView>;
}

export function clusterView(cfg: Config, mirror: ClusterMirror, health: HealthBook, upgrade: RolloutProgress | null): ClusterView {
  const t = mirror.view();
  const m = mirror.master;
  return {
    cluster: cfg.cluster.name,
    master: m >= 0 ? cfg.boards[m]!.id : null,
    term: mirror.term,
    boards: cfg.boards.map((b) => ({
      id: b.id,
      address: b.address,
      url: `${cfg.tls ? 'https' : 'http'}://${b.address}:${b.httpPort}`,
      linknum: t?.linknum[b.index] ?? 0,
      runstate: t?.runstate[b.index] ?? 0,
      role: b.index === m ? 'master' : 'node',
      drained: t?.drained?.[b.index] ?? false,
      durable: health.get(b.index)?.durable ?? null,
      configVersion: health.get(b.index)?.configVersion ?? null,
      configHash: health.get(b.index)?.configHash ?? null,
      health: health.get(b.index),
    })),
    upgrade: progressView(upgrade),
  };
}
