// Releases for the upgrade tests: signed bundles of the built board (the version raised, one whose
// board dies at start), a board's releases layout, and a board under a supervisor as systemd runs
// it (deploy/ews.service): before each start the previous release's guard (the unit's
// ExecStartPre=-, whose failure does not stop the start), then `current/ews.js`, started again
// 100 ms after every exit (Restart=always).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installRelease, switchRelease } from '../../node/upgrade/releases.ts';
import { makeBundle, newSigningKey, openBundle, parsePublicKey } from '../../shared/bundle.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { ROOT } from './harness.ts';

export interface Bundles {
  /** The signing key pair (its public half is `upgrade.publicKey`). */
  key: { privatePem: string; publicKey: string };
  /**
   * The bundle files: `base` (the built board), `next` (the same code, version raised), `dies` (its
   * board exits 3 at start), `far` (signed, but two protocol versions away), `tampered` (`next` with a byte changed).
   */
  files: { base: string; next: string; dies: string; far: string; tampered: string };
  versions: { base: string; next: string; dies: string };
  /** Lay out a board's releases under `prefix` with `base` installed and current. */
  install(prefix: string): Promise<void>;
  /** One more bundle of the built board, at `version`: its file. */
  pack(version: string): string;
}

/** Pack the built board (deploy/pack.sh) into the three bundles, in `dir`. */
export function makeBundles(dir: string): Bundles {
  const key = newSigningKey();
  const keyFile = join(dir, 'sign.pem');
  writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
  execFileSync('bash', ['deploy/pack.sh'], { cwd: ROOT, stdio: 'ignore' });
  const pack = (version: string, from = join(ROOT, 'dist/board')) => {
    const out = join(dir, `ews-${version}.ewsb`);
    execFileSync(process.execPath, ['--import', 'tsx', 'deploy/make-bundle.ts', '--key', keyFile, '--version', version, '--from', from, '--out', out], { cwd: ROOT });
    return out;
  };
  const versions = { base: '0.1.0', next: '0.2.0', dies: '0.3.0' };
  const broken = join(dir, 'broken');
  cpSync(join(ROOT, 'dist/board'), broken, { recursive: true });
  writeFileSync(join(broken, 'ews.js'), 'process.exit(3);\n');
  const pub = parsePublicKey(key.publicKey);
  if (typeof pub === 'string') throw new Error(pub);
  const next = pack(versions.next);
  const far = join(dir, 'far.ewsb');
  writeFileSync(far, makeBundle({ version: '0.4.0', arch: 'any', protocol: PROTOCOL_VERSION + 2 }, openBundle(readFileSync(next), pub, undefined).files, key.privatePem));
  const tampered = join(dir, 'tampered.ewsb');
  const t = readFileSync(next);
  t[t.length - 5] = t[t.length - 5]! ^ 1;
  writeFileSync(tampered, t);
  const files = { base: pack(versions.base), next, dies: pack(versions.dies, broken), far, tampered };
  return {
    key,
    files,
    versions,
    pack: (version) => pack(version),
    async install(prefix) {
      mkdirSync(prefix, { recursive: true });
      await installRelease(prefix, openBundle(readFileSync(files.base), pub, process.arch));
      switchRelease(prefix, versions.base);
    },
  };
}

export interface Supervised {
  /** The board's process now (undefined between two starts). */
  readonly child: ChildProcess | undefined;
  /** Stop restarting, end the board (SIGTERM), and wait for it. */
  stop(): Promise<void>;
}

/** `command(entry)`: the program and arguments that run the release's `entry` (ews.js) as the board. */
export function supervise(prefix: string, command: (entry: string) => [string, string[]], log: (text: string) => void): Supervised {
  let stopping = false;
  let child: ChildProcess | undefined;
  const run = () => {
    if (stopping) return;
    if (existsSync(join(prefix, 'previous')))
      try {
        log(execFileSync(process.execPath, [join(prefix, 'previous', 'ews.js'), 'upgrade-guard', '--prefix', prefix]).toString());
      } catch (e) {
        log(`[guard failed: ${(e as Error).message.slice(0, 200)}]\n`);
      }
    const [program, args] = command(join(prefix, 'current', 'ews.js'));
    const p = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, EWS_LOG_LEVEL: process.env.EWS_TEST_BOARD_LOG ?? 'warn' } });
    p.stdout!.on('data', (d: Buffer) => log(d.toString()));
    p.stderr!.on('data', (d: Buffer) => log(d.toString()));
    p.on('exit', (code, signal) => {
      log(`[exited ${code ?? signal}]\n`);
      child = undefined;
      setTimeout(run, 100);
    });
    child = p;
  };
  run();
  return {
    get child() {
      return child;
    },
    stop: () => {
      stopping = true;
      const p = child;
      if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
      return new Promise<void>((r) => {
        p.once('exit', () => r());
        p.kill('SIGTERM');
        setTimeout(() => p.kill('SIGKILL'), 5000).unref();
      });
    },
  };
}
