// The config a board runs now. A Config is frozen; a pushed config replaces it whole here, and
// the parts that read what may change live (devices, schedules, the config's version) read it
// through this at use time. Everything sized or bound at start keeps the config it started with.
import type { Config } from '../../shared/config.ts';

export class RunningConfig {
  constructor(
    public cfg: Config,
    /** The config file as JSON (GET /api/config and backups show it, secrets left out). */
    public raw: unknown,
  ) {}

  get configVersion(): number {
    return this.cfg.configVersion;
  }
  get digest(): string {
    return this.cfg.digest;
  }
}
