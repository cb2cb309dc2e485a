// UDP sequence numbers are (epoch, counter); the epoch must grow on every boot so peers never
// mistake a rebooted board's packets for replays. With a state dir it survives a clock that
// starts in 1970 (boards without an RTC); without one it is the wall clock in ms.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
  writeFileSync(`${file}.tmp`, String(epoch));
  renameSync(`${file}.tmp`, file);
  return epoch;
}
