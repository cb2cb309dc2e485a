// `ews` command line (SPEC §2). Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, startProblems } from '../shared/config.ts';
import { Board } from './board.ts';
import { runDemo } from './demo.ts';
import { hashPassword } from './auth/password.ts';
import { startSystemdNotify } from './sd-notify.ts';
import { runCalibrate } from './calibrate.ts';

const USAGE = `usage:
  ews start --config FILE --board ID     boot one board (or EWS_CONFIG, EWS_BOARD)
            [--simulate-devices]         answer device ports with their configured simulators
  ews demo [--boards N]                  a local N-board cluster on 127.0.0.1 (default 3)
  ews check-config --config FILE         validate; exit 2 listing every problem
  ews status --url URL [--token T]       print the cluster's state table (or EWS_TOKEN)
  ews hash-password                      read a password on stdin, print its hash for auth.users[]
  ews calibrate --url URL [--write FILE] [--token T]   find a, b of U = a·R + b·W (content adaptation)`;

function fail(msg: string, code = 2): number {
  process.stderr.write(`${msg}\n`);
  return code;
}

function load(file: string | undefined): ReturnType<typeof loadConfig> | number {
  if (!file) return fail(`--config FILE is required\n${USAGE}`);
  try {
    return loadConfig(file);
  } catch (e) {
    if (e instanceof ConfigError) return fail(e.problems.join('\n'));
    throw e;
  }
}

async function start(values: Record<string, string | boolean | undefined>): Promise<number> {
  const cfg = load((values.config as string | undefined) ?? process.env.EWS_CONFIG);
  if (typeof cfg === 'number') return cfg;
  const boardId = (values.board as string | undefined) ?? process.env.EWS_BOARD;
  if (!boardId) return fail('--board ID is required');
  if (!cfg.boards.some((b) => b.id === boardId)) return fail(`board: "${boardId}" is not one of ${cfg.boards.map((b) => b.id).join(', ')}`);
  const problems = startProblems(cfg);
  if (problems.length > 0) return fail(problems.join('\n'));
  let board: Board;
  try {
    board = await Board.start({ cfg, boardId, simulateDevices: values['simulate-devices'] === true });
  } catch (e) {
    return fail(`cannot start board ${boardId}: ${(e as Error).message}`, 1);
  }
  const stopNotify = startSystemdNotify();
  // SIGHUP: re-read the config; classification rules change live, anything else needs a restart.
  const file = (values.config as string | undefined) ?? process.env.EWS_CONFIG!;
  process.on('SIGHUP', () => {
    try {
      const next = loadConfig(file);
      if (board.intake.reclassify(next.classes)) board.log.info({ classes: next.classes.length }, 'classification reloaded');
      else board.log.warn('the set of classes changed: restart the board to apply it');
    } catch (e) {
      board.log.error({ problems: e instanceof ConfigError ? e.problems : String(e) }, 'config reload refused; keeping the running config');
    }
  });
  // The demo drives a board's "cable" over the IPC channel.
  process.on('message', (m: unknown) => {
    if (typeof m !== 'object' || m === null) return;
    if ('cut' in m) board.setCut(Boolean((m as { cut: unknown }).cut));
    if ('device' in m && 'plugged' in m) board.setDevicePlugged(String((m as { device: unknown }).device), Boolean((m as { plugged: unknown }).plugged));
  });
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

async function readStdin(maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of process.stdin) {
    n += (c as Buffer).length;
    if (n > maxBytes) break;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function hashPasswordCmd(): Promise<number> {
  if (process.stdin.isTTY) process.stderr.write('password (then Enter and Ctrl-D): ');
  const pw = (await readStdin(1024)).replace(/\r?\n$/, '');
  if (pw.length < 8) return fail('the password must have at least 8 characters');
  process.stdout.write(`${await hashPassword(pw)}\n`);
  return 0;
}

async function status(url: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required');
  let v: { cluster: string; master: string | null; term: number; boards: Array<{ id: string; address: string; linknum: number; runstate: number; role: string }> };
  try {
    const r = await fetch(new URL('/api/cluster', url), { signal: AbortSignal.timeout(5000), headers: token ? { authorization: `Bearer ${token}` } : {} });
    if (r.status === 401 || r.status === 403) return fail(`${url}: ${r.status}: pass --token (from POST /api/login) or EWS_TOKEN`, 1);
    v = (await r.json()) as typeof v;
  } catch (e) {
    return fail(`cannot read ${url}: ${(e as Error).message}`, 1);
  }
  const lines = [`cluster ${v.cluster}  master ${v.master ?? '(none)'}  term ${v.term}`, 'board      address          linknum  runstate  role'];
  for (const b of v.boards) lines.push(`${b.id.padEnd(10)} ${b.address.padEnd(16)} ${String(b.linknum).padStart(7)}  ${String(b.runstate).padStart(8)}  ${b.role}`);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args: rest, options: { config: { type: 'string' }, board: { type: 'string' }, boards: { type: 'string' }, url: { type: 'string' }, token: { type: 'string' }, write: { type: 'string' }, 'simulate-devices': { type: 'boolean' } }, strict: true }).values;
  } catch (e) {
    return fail(`${(e as Error).message}\n${USAGE}`);
  }
  switch (cmd) {
    case 'start':
      return start(values);
    case 'check-config': {
      const cfg = load(values.config as string | undefined);
      if (typeof cfg === 'number') return cfg;
      process.stdout.write(`ok: ${cfg.boards.length} boards, ${cfg.classes.length} classes, scheduler ${cfg.qos.scheduler}\n`);
      return 0;
    }
    case 'status':
      return status(values.url as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'hash-password':
      return hashPasswordCmd();
    case 'calibrate': {
      if (!values.url) return fail('--url URL is required');
      try {
        await runCalibrate(values.url as string, { write: values.write as string | undefined, token: (values.token as string | undefined) ?? process.env.EWS_TOKEN, seconds: Number(process.env.EWS_CALIBRATE_SECONDS ?? 2), sizes: [1024, 16_384, 65_536, 262_144] }, (l) => process.stdout.write(`${l}\n`));
        return 0;
      } catch (e) {
        return fail(`calibration failed: ${(e as Error).message}`, 1);
      }
    }
    case 'demo': {
      const n = Number(values.boards ?? 3);
      if (!Number.isInteger(n) || n < 1 || n > 9) return fail('--boards must be 1 to 9');
      return runDemo(n);
    }
    default:
      return fail(USAGE);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    setImmediate(() => process.exit(code));
  },
  (err: unknown) => {
    process.stderr.write(`ews: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
