// Reading the config file: the one place the config is raw JSON. parseConfig (shared/) checks it
// into a typed, frozen Config; nothing after this sees the file.
import { readFileSync } from 'node:fs';
import { ConfigError, parseConfig } from '../shared/config.ts';
import type { Config } from '../shared/config-types.ts';

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
