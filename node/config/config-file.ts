// The config file: the one place the config is raw JSON. parseConfig (shared/) checks it into a
// typed, frozen Config; nothing after this sees the file. A pushed config is written here too.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, parseConfig } from '../../shared/config.ts';
import type { Config } from '../../shared/config-types.ts';
import { writeDurably } from '../state/boot-epoch.ts';

/** The file as JSON, after loadConfig accepted it (a backup carries it, secrets left out). */
export function rawConfig(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError([`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError([`${file}: not valid JSON (${(e as Error).message})`]);
  }
  return parseConfig(raw);
}

/** Where a board with a state directory keeps the config pushed to it (the installed file stays as installed: systemd's ProtectSystem keeps /etc read-only for the board). */
export const pushedConfigPath = (stateDir: string, boardId: string): string => join(stateDir, `${boardId}.config.json`);

/**
 * The config a board boots with: its file, unless its state directory holds a pushed config of a
 * higher configVersion (a push since the file was installed). A pushed file that no longer loads
 * is ignored, and said.
 */
export function bootConfig(file: string, stateDir: string | undefined, boardId: string): { cfg: Config; raw: unknown; from: string; ignored?: string } {
  const cfg = loadConfig(file);
  const pushed = stateDir === undefined ? undefined : pushedConfigPath(stateDir, boardId);
  if (!pushed || !existsSync(pushed)) return { cfg, raw: rawConfig(file), from: file };
  try {
    const p = loadConfig(pushed);
    if (p.configVersion > cfg.configVersion) return { cfg: p, raw: rawConfig(pushed), from: pushed };
    return { cfg, raw: rawConfig(file), from: file, ignored: `${pushed} holds configVersion ${p.configVersion}, not above the file's ${cfg.configVersion}` };
  } catch (e) {
    return { cfg, raw: rawConfig(file), from: file, ignored: `${pushed} does not load: ${e instanceof ConfigError ? e.problems.join('; ') : (e as Error).message}` };
  }
}

/**
 * A pushed config made the board's config file, durably: the new text is written and synced
 * beside it, the running file is kept as `FILE.prev`, then the new one is renamed into place and
 * the directory synced. A power cut leaves either the old file or the new one, never half of one.
 */
export function writeConfigFile(file: string, text: string): void {
  if (existsSync(file)) copyFileSync(file, `${file}.prev`);
  writeDurably(file, text);
}
