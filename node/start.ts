// Booting one board from the command line: config checks (exit 2 naming the problem), the
// board, SIGHUP reloads of the classification rules and the users, systemd readiness, a clean stop.
import { type Config, ConfigError, startProblems } from '../shared/config.ts';
import { Board } from './board.ts';
import { localAddresses, ownsAddress } from './cluster-plane/local-address.ts';
import type { Transport } from './cluster-plane/transport.ts';
import { boardProblems } from './config/config-apply.ts';
import { bootConfig, loadConfig, pushedConfigPath } from './config/config-file.ts';
import type { PortFactory } from './devices/serial-line.ts';
import { startSystemdNotify } from './services/sd-notify.ts';
import { MEMORY_ONLY_COST, resolveStateDir } from './state/state-dir.ts';
import { readTlsMaterial, type TlsMaterial } from './tls-material.ts';
import { goBack, onTrial, releasePrefix, UPGRADE_EXIT } from './upgrade/upgrade-board.ts';
import { VERSION } from './version.ts';

export function fail(msg: string, code = 2): number {
  process.stderr.write(`${msg}\n`);
  return code;
}

export function loadOrFail(file: string | undefined, usage: string): ReturnType<typeof loadConfig> | number {
  if (!file) return fail(`--config FILE is required\n${usage}`);
  try {
    return loadConfig(file);
  } catch (e) {
    if (e instanceof ConfigError) return fail(e.problems.join('\n'));
    throw e;
  }
}

export interface StartOptions {
  /** The network (the system's unless the demo or a test brings a cable to pull). */
  transport?: Pick<Transport, 'accepting'>;
  /** The cluster plane's UDP transport, as a module its thread loads (see BoardOptions). */
  planeTransport?: string;
  /** How device ports are opened, given the config and this board's index (the demo's simulators). */
  openPort?: (cfg: Config, board: number) => PortFactory;
  /** Called once the board runs (the demo's control channel hooks in here). */
  started?: (board: Board) => void;
}

/** `ews start`: boot one board and run it until SIGTERM/SIGINT; the exit code. */
export async function startBoard(values: Record<string, string | boolean | undefined>, usage: string, opts: StartOptions = {}): Promise<number> {
  const cfg = loadOrFail((values.config as string | undefined) ?? process.env.EWS_CONFIG, usage);
  if (typeof cfg === 'number') return cfg;
  const boardId = (values.board as string | undefined) ?? process.env.EWS_BOARD;
  if (!boardId) return fail('--board ID is required');
  if (!cfg.boards.some((b) => b.id === boardId)) return fail(`board: "${boardId}" is not one of ${cfg.boards.map((b) => b.id).join(', ')}`);
  const problems = startProblems(cfg);
  if (problems.length > 0) return fail(problems.join('\n'));
  // Another machine's address: this board would answer for it, and as master claim the VIP here.
  const self = cfg.boards.find((b) => b.id === boardId)!;
  if (!values['no-address-check'] && !ownsAddress(self.address))
    return fail(
      `boards[${self.index}].address: ${self.address} is not an address of this machine (it has ${localAddresses().join(', ')}); start board ${boardId} on the machine that owns it, or pass --no-address-check`,
    );
  const file = ((values.config as string | undefined) ?? process.env.EWS_CONFIG)!;
  let board: Board;
  // A pushed config that needs a restart: this board stops and starts again from the file the
  // push wrote, in this process (its state directory carries what must survive).
  let restarting = false;
  const restart = (): void => {
    if (restarting) return;
    restarting = true;
    void (async () => {
      const next = loadOrFail(file, usage);
      await board.close();
      const again = typeof next === 'number' ? 'the config file no longer loads' : await boot(next);
      if (typeof again === 'string') {
        process.stderr.write(`cannot restart board ${boardId}: ${again}\n`);
        process.exit(1);
      }
      board = again;
      board.log.info({ configVersion: board.cfg.configVersion }, 'restarted into the pushed config');
      restarting = false;
    })();
  };
  // A release installed (node/upgrade/): stop, and exit so the supervisor starts `current`.
  const exitIntoRelease = (): void => {
    void board.close().then(() => process.exit(UPGRADE_EXIT));
  };
  // `fileCfg`: the file's config; the state directory it names may hold a newer pushed one.
  const boot = async (fileCfg: Config): Promise<Board | string> => {
    const home = resolveStateDir(fileCfg.stateDir);
    if ('problem' in home) return home.problem;
    const chosen = bootConfig(file, home.dir, boardId);
    const c = chosen.cfg;
    if (!c.boards.some((x) => x.id === boardId)) return `board: "${boardId}" is not in ${chosen.from}`;
    let tls: TlsMaterial | undefined;
    try {
      tls = c.tls && readTlsMaterial(c.tls);
    } catch (e) {
      return (e as Error).message;
    }
    const state = resolveStateDir(c.stateDir);
    if ('problem' in state) return state.problem;
    let b: Board;
    try {
      const index = c.boards.findIndex((x) => x.id === boardId);
      const raw = chosen.raw;
      b = await Board.start({
        cfg: c,
        raw,
        boardId,
        stateDir: state.dir,
        transport: opts.transport,
        planeTransport: opts.planeTransport,
        openPort: opts.openPort?.(c, index),
        tls,
        pushedConfigFile: home.dir === undefined ? file : pushedConfigPath(home.dir, boardId),
        restart,
        exit: exitIntoRelease,
      });
    } catch (e) {
      return `cannot start board ${boardId}: ${(e as Error).message}`;
    }
    if (chosen.from !== file) b.log.info({ configVersion: c.configVersion, from: chosen.from }, 'running the config pushed to this board');
    if (chosen.ignored) b.log.warn({ ignored: chosen.ignored }, 'booting from the installed config file');
    if (state.dir === undefined) b.log.warn({ stateDir: false }, MEMORY_ONLY_COST);
    else b.log.info({ stateDir: state.dir, from: state.from }, 'state kept on disk');
    return b;
  };
  const first = await boot(cfg);
  if (typeof first === 'string') return fail(first, first.startsWith('cannot start') ? 1 : 2);
  board = first;
  const stopNotify = startSystemdNotify();
  // SIGHUP: re-read the config; classification rules change live, anything else needs a restart.
  process.on('SIGHUP', () => {
    try {
      const next = loadConfig(file);
      if (board.intake.reclassify(next.classes)) board.log.info({ classes: next.classes.length }, 'classification reloaded');
      else board.log.warn('the set of classes changed: restart the board to apply it');
      // Users and roles apply at once: a removed user's sessions stop working, a new role counts.
      if (board.guard.reloadUsers(next.auth)) board.log.info({ users: next.auth?.users.length ?? 0 }, 'users reloaded');
      else board.log.warn('auth.disabled changed: restart the board to apply it');
    } catch (e) {
      board.log.error({ problems: e instanceof ConfigError ? e.problems : String(e) }, 'config reload refused; keeping the running config');
    }
  });
  // A release on trial proves itself (its self-test, then runstate 1 in the cluster) or goes back.
  const prefix = releasePrefix(board.running.cfg);
  if (onTrial(prefix))
    void judgeTrial(board).then((why) => {
      if (why === undefined) return board.log.info({ release: VERSION }, 'release confirmed');
      board.log.error(goBack(prefix!, why));
      exitIntoRelease();
    });
  opts.started?.(board);
  await new Promise<void>((resolve) => {
    const stop = (): void => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    process.once('disconnect', stop);
  });
  stopNotify();
  await board.close();
  return 0;
}

/** Undefined when the release on trial is healthy (self-test passed, runstate 1 within upgrade.healthS), else why not. */
async function judgeTrial(board: Board): Promise<string | undefined> {
  const cfg = board.running.cfg;
  const problems = boardProblems(cfg, board.self);
  if (problems.length > 0) return `failed its self-test: ${problems.join('; ')}`;
  const end = Date.now() + cfg.upgrade.healthS * 1000;
  while (Date.now() < end) {
    // As the cluster's table has it (the state the master broadcasts), the one /api/cluster shows.
    if (board.mirror.master >= 0 && board.mirror.view()?.runstate[board.self.index] === 1) return undefined;
    await new Promise((r) => setTimeout(r, 100));
  }
  return `did not rejoin the cluster with runstate 1 within upgrade.healthS (${cfg.upgrade.healthS} s)`;
}
