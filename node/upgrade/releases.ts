// Releases on a board: `<prefix>/releases/<version>/` each, `current` the link the service runs
// (`<prefix>/current/ews.js`), `previous` the one it ran before (for a rollback). A release is
// written under a temporary name and renamed into place; a link is switched by renaming a new
// link over it: a power cut leaves the old release running or the new one, never half of one.
// Only the current and the previous releases stay (the disk is bounded).
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { OpenedBundle } from '../../shared/bundle.ts';

const RELEASES = 'releases';
/**
 * Files written and synced at once while installing. Each file takes a few turns of the request
 * thread's event loop, so under load the files in flight set the pace: measured with the loop busy
 * 2 ms per turn, 4 at once took 4.4-4.6 s and 16 took 1.5-2.2 s (idle, 0.3-0.4 s against 0.6-1.2 s:
 * more syncs at once contend on the disk). A thread of its own for the writes did no better.
 */
const WRITES_AT_ONCE = 16;

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The version a link points at, or undefined. */
function linked(prefix: string, name: 'current' | 'previous'): string | undefined {
  try {
    return basename(readlinkSync(join(prefix, name)));
  } catch {
    return undefined;
  }
}

export const currentRelease = (prefix: string): string | undefined => linked(prefix, 'current');
export const previousRelease = (prefix: string): string | undefined => linked(prefix, 'previous');

/**
 * Unpack an opened (verified) bundle into releases/<version>; its directory. Every file is synced
 * before the rename makes the release visible, off the request thread: a release is about 1400
 * files, and written and synced one by one on the request thread they held it for 0.5-0.6 s on
 * this machine's disk (longer on an SD card), while the master that installs its own release
 * last still serves the cluster.
 */
export async function installRelease(prefix: string, b: OpenedBundle): Promise<string> {
  const root = join(prefix, RELEASES);
  await mkdir(root, { recursive: true });
  const version = b.manifest.version;
  if (version === currentRelease(prefix)) throw new Error(`release ${version} is the one running`);
  const tmp = join(root, `.${version}.${randomBytes(4).toString('hex')}.partial`);
  let next = 0;
  let failed = false;
  const write = async (f: OpenedBundle['files'][number]): Promise<void> => {
    const path = join(tmp, f.path);
    await mkdir(dirname(path), { recursive: true });
    const fh = await open(path, 'w', f.mode);
    try {
      await fh.writeFile(f.data);
      await fh.sync();
    } finally {
      await fh.close();
    }
  };
  const writer = async (): Promise<void> => {
    for (let i = next++; i < b.files.length && !failed; i = next++)
      await write(b.files[i]!).catch((e: unknown) => {
        failed = true;
        throw e;
      });
  };
  // A write that fails (a full disk) stops the others; the partial release goes, nothing else was touched.
  const bad = (await Promise.allSettled(Array.from({ length: WRITES_AT_ONCE }, writer))).find((r) => r.status === 'rejected');
  if (bad) {
    await rm(tmp, { recursive: true, force: true });
    throw bad.reason;
  }
  const dir = join(root, version);
  await rm(dir, { recursive: true, force: true });
  await rename(tmp, dir);
  syncDir(root);
  return dir;
}

function link(prefix: string, name: 'current' | 'previous', version: string): void {
  const tmp = join(prefix, `.${name}.${randomBytes(4).toString('hex')}`);
  symlinkSync(join(RELEASES, version), tmp);
  renameSync(tmp, join(prefix, name));
}

/** Make `version` current (the one running becomes previous); `prune` then removes the one before. */
export function switchRelease(prefix: string, version: string): void {
  if (!existsSync(join(prefix, RELEASES, version))) throw new Error(`no release ${version} under ${prefix}`);
  const was = currentRelease(prefix);
  if (was === version) return;
  if (was) link(prefix, 'previous', was);
  link(prefix, 'current', version);
  syncDir(prefix);
}

/** Back to the previous release (the current one becomes previous); false when there is none. */
export function rollBack(prefix: string): boolean {
  const prev = previousRelease(prefix);
  if (!prev || !existsSync(join(prefix, RELEASES, prev))) return false;
  switchRelease(prefix, prev);
  return true;
}

/**
 * A release on trial failed: `back` is current again, the failed release is removed, and there
 * is no previous one (the one before `back` was pruned when the failed one came): a later
 * rollback never lands on the release that failed.
 */
export function abandon(prefix: string, failed: string, back: string): boolean {
  if (!existsSync(join(prefix, RELEASES, back))) return false;
  link(prefix, 'current', back);
  rmSync(join(prefix, 'previous'), { force: true });
  syncDir(prefix);
  if (failed !== back) rmSync(join(prefix, RELEASES, failed), { recursive: true, force: true });
  return true;
}

/**
 * Remove every release but the current and the previous one (and half-written ones), off the
 * request thread: a release's ~1400 files removed synchronously held it for about 170 ms here.
 */
export async function prune(prefix: string): Promise<string[]> {
  const keep = new Set([currentRelease(prefix), previousRelease(prefix)]);
  const removed: string[] = [];
  for (const name of readdirSync(join(prefix, RELEASES))) {
    if (keep.has(name)) continue;
    await rm(join(prefix, RELEASES, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
