// The release before the current protocol version, built from its own source in this repository's
// history (a clone of main has it): the real previous code, not the current code told to act old.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './harness.ts';

/** The last commit of protocol 1 (PROTOCOL_VERSION 1 in shared/protocol.ts). */
export const PROTOCOL_1_COMMIT = '4ecb06ba3833019afe271c5b4472ef050b805982';

/** Build the release at `commit` into `dir` (its own build script, this checkout's packages): the path of its ews.js. */
export function buildRelease(commit: string, dir: string): string {
  try {
    execFileSync('git', ['-C', ROOT, 'cat-file', '-e', `${commit}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`commit ${commit} is not in this checkout's history: the test builds the previous release from it (a shallow clone lacks it: fetch with --unshallow)`);
  }
  mkdirSync(dir, { recursive: true });
  execFileSync('bash', ['-c', `git -C "${ROOT}" archive --format=tar ${commit} | tar -x -C "${dir}"`]);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'ignore' });
  const bundle = join(dir, 'dist', 'ews.js');
  if (!existsSync(bundle)) throw new Error(`the release at ${commit} built no dist/ews.js`);
  return bundle;
}
