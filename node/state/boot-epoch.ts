// UDP sequence numbers are (epoch, counter); the epoch must grow on every boot so peers never
// mistake a rebooted board's packets for replays. With a state dir it survives a clock that
// starts in 1970 (boards without an RTC); without one it is the wall clock in ms.
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export function nextBootEpoch(stateDir: string | undefined, boardId: string, wallMs = Date.now()): number {
  if (!stateDir) return wallMs;
  const file = join(stateDir, `${boardId}.epoch`);
  let last = 0;
  try {
    last = Number(readFileSync(file, 'utf8').trim()) || 0;
  } catch {
    /* first boot */
  }
  const epoch = Math.max(wallMs, last + 1);
  mkdirSync(stateDir, { recursive: true });
  writeDurably(file, String(epoch));
  return epoch;
}

/** Write, fsync, rename over the old file, fsync the directory: after a power cut the file holds the old value or the new one, never nothing. */
export function writeDurably(file: string, text: string): void {
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dir = openSync(dirname(file), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}
