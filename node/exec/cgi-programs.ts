// A board's CGI programs: the executable regular files in its cgi directory, by name, each with
// a content hash the board announces to the cluster. A reserved name is refused with a log line.
// When ews runs as root, a directory or program anyone but root may write is unsafe (sshd's
// StrictModes rule): it is listed as such and never run.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PROGRAM_NAME_RE, programNameProblem } from '../../shared/cgi.ts';
import type { Logger } from '../log.ts';

/** The most programs a board lists: the rest are left out with a log line. */
export const PROGRAMS_LISTED_MAX = 256;
/** A program larger than this is not hashed whole: its hash covers its first bytes and its size. */
const HASH_BYTES_MAX = 4 << 20;

export interface Program {
  readonly name: string;
  readonly file: string;
  /** sha256 of the file, hex, first 16 characters: the same program on every board has the same. */
  readonly hash: string;
  /** Why it may not run (writable by others while ews is root), or undefined. */
  readonly unsafe: string | undefined;
}

const writableByOthers = (mode: number, uid: number) => uid !== 0 || (mode & 0o022) !== 0;

/** The programs in `dir` now; a missing directory has none. */
export function scanPrograms(dir: string, log: Logger, asRoot = process.getuid?.() === 0): Map<string, Program> {
  const out = new Map<string, Program>();
  let names: string[];
  let dirUnsafe: string | undefined;
  try {
    const st = statSync(dir);
    if (!st.isDirectory()) return out;
    if (asRoot && writableByOthers(st.mode, st.uid)) dirUnsafe = `${dir} is writable by someone other than root`;
    names = readdirSync(dir).sort();
  } catch {
    return out;
  }
  for (const name of names) {
    if (!PROGRAM_NAME_RE.test(name)) continue;
    const file = join(dir, name);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(file);
    } catch {
      continue;
    }
    if (!st.isFile() || (st.mode & 0o111) === 0) continue;
    const problem = programNameProblem(name);
    if (problem) {
      log.warn({ program: name, dir }, `cgi: ${name} ${problem}; not served`);
      continue;
    }
    if (out.size >= PROGRAMS_LISTED_MAX) {
      log.warn({ dir, max: PROGRAMS_LISTED_MAX }, 'cgi: more programs than a board lists; the rest are not served');
      break;
    }
    const unsafe = dirUnsafe ?? (asRoot && writableByOthers(st.mode, st.uid) ? `${file} is writable by someone other than root` : undefined);
    if (unsafe) log.warn({ program: name }, `cgi: ${unsafe}; it is not run`);
    const head = Buffer.alloc(Math.min(Number(st.size), HASH_BYTES_MAX));
    const fd = openSync(file, 'r');
    try {
      readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
    const hash = createHash('sha256').update(head).update(String(st.size)).digest('hex').slice(0, 16);
    out.set(name, { name, file, hash, unsafe });
  }
  return out;
}
