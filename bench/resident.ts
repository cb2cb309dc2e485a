// Resident memory of a process: its private dirty pages (the budget), and RSS split into
// file-backed pages and anonymous memory; for a 32-bit
// guest under qemu user-mode emulation, the guest's part only. Such a guest lives below 4 GiB of
// the emulator's address space (guest_base 0, the rest reserved), so its RSS is the resident pages
// of the mappings there, from /proc/PID/smaps; the emulator's own heap and translation cache lie
// above. A 64-bit guest has no such line between them.
import { readFileSync } from 'node:fs';

export interface Resident {
  /** Private dirty pages (smaps Private_Dirty): heaps, stacks, written pages; what a board cannot give back. */
  privateDirtyMb: number;
  rssMb: number;
  fileMb: number;
  anonMb: number;
}

const GIB4 = 2 ** 32;
const mb = (kb: number) => +(kb / 1024).toFixed(1);

export function resident(pid: number, guest32: boolean): Resident {
  if (!guest32) {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN);
    const roll = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const dirty = Number(/^Private_Dirty:\s+(\d+)/m.exec(roll)?.[1] ?? NaN);
    return { privateDirtyMb: mb(dirty), rssMb: mb(kb('VmRSS')), fileMb: mb(kb('RssFile')), anonMb: mb(kb('RssAnon') + kb('RssShmem')) };
  }
  let rss = 0;
  let anon = 0;
  let dirty = 0;
  let inGuest = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const range = /^([0-9a-f]+)-[0-9a-f]+ /.exec(line);
    if (range) inGuest = Number.parseInt(range[1]!, 16) < GIB4;
    else if (inGuest && line.startsWith('Rss:')) rss += Number(line.split(/\s+/)[1]);
    else if (inGuest && line.startsWith('Anonymous:')) anon += Number(line.split(/\s+/)[1]);
    else if (inGuest && line.startsWith('Private_Dirty:')) dirty += Number(line.split(/\s+/)[1]);
  }
  return { privateDirtyMb: mb(dirty), rssMb: mb(rss), fileMb: mb(rss - anon), anonMb: mb(anon) };
}
