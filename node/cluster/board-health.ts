// Each board's health as an operator reads it (CPU, memory, uptime, version, temperature): this
// board samples its own, the others' arrive in HEALTH packets every few seconds.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { VERSION } from '../version.ts';

export interface BoardHealth {
  /** This process's CPU use over the last interval, % of one core (all its threads). */
  cpuPct: number;
  rssBytes: number;
  uptimeS: number;
  version: string;
  /** The hottest thermal zone, °C; null where /sys/class/thermal has none. */
  tempC: number | null;
  /** When it was sampled (ms since the epoch, the sampling board's clock). */
  at: number;
  /** Whether the board keeps its state on disk (a stateDir) or in memory only. */
  durable: boolean;
  /** The config the board runs: its configVersion and content hash (null from a board too old to say). */
  configVersion: number | null;
  configHash: string | null;
  /** The highest cluster protocol version the board speaks (null from a board of protocol 1). */
  protocol: number | null;
}

const THERMAL = '/sys/class/thermal';

/** The hottest thermal zone in °C, or null. */
export function readTemperature(dir = THERMAL): number | null {
  let max: number | null = null;
  let zones: string[];
  try {
    zones = readdirSync(dir).filter((z) => z.startsWith('thermal_zone'));
  } catch {
    return null;
  }
  for (const z of zones) {
    try {
      const milli = Number(readFileSync(join(dir, z, 'temp'), 'utf8').trim());
      if (Number.isFinite(milli)) max = Math.max(max ?? -Infinity, milli / 1000);
    } catch {
      /* a zone without a readable sensor */
    }
  }
  return max;
}

/** A HEALTH packet body, checked; undefined if it does not fit. */
export function parseHealth(body: Record<string, unknown>): BoardHealth | undefined {
  const num = (k: string, min: number, max: number) => (typeof body[k] === 'number' && Number.isFinite(body[k]) && body[k] >= min && body[k] <= max ? body[k] : undefined);
  const cpuPct = num('cpuPct', 0, 10_000),
    rssBytes = num('rssBytes', 0, 2 ** 40),
    uptimeS = num('uptimeS', 0, 2 ** 40),
    at = num('at', 0, 2 ** 53);
  const tempC = body.tempC === null ? null : num('tempC', -100, 300);
  const version = typeof body.version === 'string' && body.version.length <= 32 ? body.version : undefined;
  const durable = typeof body.durable === 'boolean' ? body.durable : undefined;
  if (cpuPct === undefined || rssBytes === undefined || uptimeS === undefined || at === undefined || tempC === undefined || version === undefined || durable === undefined) return undefined;
  // Absent from a board that predates them: unknown, not malformed.
  const configVersion = body.configVersion === undefined ? null : num('configVersion', 0, Number.MAX_SAFE_INTEGER);
  const configHash = body.configHash === undefined ? null : typeof body.configHash === 'string' && /^[0-9a-f]{64}$/.test(body.configHash) ? body.configHash : undefined;
  const protocol = body.protocol === undefined ? null : num('protocol', 1, 255);
  if (configVersion === undefined || configHash === undefined || protocol === undefined) return undefined;
  return { cpuPct, rssBytes, uptimeS, version, tempC, at, durable, configVersion, configHash, protocol };
}

export class HealthBook {
  private readonly latest: Array<BoardHealth | null>;
  private lastCpu = process.cpuUsage();
  private lastAt = performance.now();

  constructor(
    boards: number,
    private readonly self: number,
    private readonly durable: boolean,
    /** The config this board runs (Config.configVersion and digest). */
    private readonly config: { readonly configVersion: number; readonly digest: string },
    private readonly temperature: () => number | null = readTemperature,
  ) {
    this.latest = Array.from({ length: boards }, () => null);
  }

  /** Sample this board now (CPU over the time since the last sample). */
  sample(): BoardHealth {
    const cpu = process.cpuUsage(this.lastCpu);
    const now = performance.now();
    const wallUs = Math.max(1, (now - this.lastAt) * 1000);
    this.lastCpu = process.cpuUsage();
    this.lastAt = now;
    const h: BoardHealth = {
      cpuPct: Math.round(((cpu.user + cpu.system) / wallUs) * 1000) / 10,
      rssBytes: process.memoryUsage.rss(),
      uptimeS: Math.round(process.uptime()),
      version: VERSION,
      tempC: this.temperature(),
      at: Date.now(),
      durable: this.durable,
      configVersion: this.config.configVersion,
      configHash: this.config.digest,
      protocol: PROTOCOL_VERSION,
    };
    this.latest[this.self] = h;
    return h;
  }

  /** Another board's HEALTH packet; false if malformed. */
  apply(board: number, body: Record<string, unknown>): boolean {
    const h = parseHealth(body);
    if (!h || board === this.self || board < 0 || board >= this.latest.length) return false;
    this.latest[board] = h;
    return true;
  }

  get(board: number): BoardHealth | null {
    return this.latest[board] ?? null;
  }
}
