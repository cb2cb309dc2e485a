// What the page reads from the API (docs/http-api.md), as far as it uses it.

export type Value = number | boolean | string;

export interface Health {
  cpuPct: number;
  rssBytes: number;
  uptimeS: number;
  tempC: number | null;
  version: string;
}
export interface BoardRow {
  id: string;
  role: string;
  linknum: number;
  runstate: number;
  url?: string;
  /** Drained by an admin: up, given no new work. */
  drained?: boolean;
  health?: Health | null;
  /** The config the board runs (null until its health is heard). */
  configVersion?: number | null;
  configHash?: string | null;
}
/** A rolling upgrade or rollback as the master runs it (null: none since it became master). */
export interface UpgradeProgress {
  kind: 'upgrade' | 'rollback';
  from: string;
  to: string;
  finishedAt: number | null;
  stopped: string | null;
  boards: Array<{ id: string; step: string; pct: number; detail: string }>;
}
export interface ClusterState {
  cluster?: string;
  master: string | null;
  term: number;
  boards: BoardRow[];
  upgrade?: UpgradeProgress | null;
}

export interface ActionInfo {
  name: string;
  input: { type: 'boolean' | 'number'; min?: number; max?: number } | null;
  point: string | null;
  sets?: Value | null;
}
export interface Device {
  id: string;
  name?: string;
  online: boolean;
  /** Every board it is attached to is drained for maintenance. */
  maintenance?: boolean;
  boards: string[];
  points: Record<string, Value>;
  units?: Record<string, string>;
  updatedAt: number | null;
  pollMs: number;
  actions?: ActionInfo[];
}
export interface DeviceSnapshot {
  id: string;
  online: boolean;
  points?: Record<string, Value>;
  updatedAt?: number | null;
}

export interface Alarm {
  id: string;
  active: boolean;
  acked: { user: string; at: number } | null;
  severity: string;
  message: string;
  since: number;
  value: number | null;
  kind: string;
}
export interface LogEntry {
  id: string;
  at: number;
  kind: string;
  user?: string;
  text: string;
}

export interface QosView {
  scheduler: string;
  /** The content level the master serves at, and the utilisation it chose it from. */
  G?: number;
  U?: number;
  weights?: number[];
  cf?: number[];
  patterns: string[];
  proQoS?: number[];
  admission?: Array<{ targetIn: number | null; p: number }>;
  quotas?: number[];
  /** qos.highReserve: the master's free slots, how many of them the other classes leave to the first, and the first's recent longest wait (s). */
  freeSlots?: number;
  reservedSlots?: number;
  highWaitS?: number;
}
export interface Stats {
  at: number;
  classes: Array<{ name: string; served: number; queued: number }>;
  qos?: QosView;
}
