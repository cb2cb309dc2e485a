// Reading the config file: the one place the config is raw JSON. parseConfig (shared/) checks it
// into a typed, frozen Config; nothing after this sees the file.

import { randomBytes } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { ConfigError, parseConfig } from '../../shared/config.ts';
import type { Config } from '../../shared/config-types.ts';

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

/**
 * A pushed config made the board's config file, durably: the new text is written and synced
 * beside it, the running file is kept as `FILE.prev`, then the new one is renamed into place and
 * the directory synced. A power cut leaves either the old file or the new one, never half of one.
 */
export function writeConfigFile(file: string, text: string): void {
  const dir = dirname(file);
  // Its own name: boards that share a file (a test's) never rename each other's half-written one.
  const tmp = join(dir, `.${basename(file)}.${process.pid}-${randomBytes(4).toString('hex')}.next`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (existsSync(file)) copyFileSync(file, `${file}.prev`);
  renameSync(tmp, file);
  const d = openSync(dir, 'r');
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
}
