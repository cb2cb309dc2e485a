// `ews` command line. Exit codes: 0 ok, 1 runtime failure, 2 bad usage or bad config.

import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { newSigningKey } from '../shared/bundle.ts';
import { nearMatch } from '../shared/near-match.ts';
import { hashPassword } from './auth/password.ts';
import { runCalibrate } from './cli/calibrate.ts';
import { genCert } from './cli/gen-cert.ts';
import { configPushCmd, drainCmd, handoverCmd, rollbackCmd, upgradeCmd } from './cli/maintenance-cmd.ts';
import { readPassword } from './cli/password-prompt.ts';
import { restoreCmd } from './cli/restore-cmd.ts';
import { status } from './cli/status-cmd.ts';
import { fail, loadOrFail, startBoard } from './start.ts';
import { DEFAULT_STATE_DIR, MEMORY_ONLY_COST } from './state/state-dir.ts';
import { readTlsMaterial } from './tls-material.ts';
import { guardStart } from './upgrade/upgrade-board.ts';

const USAGE = `usage:
  ews start --config FILE --board ID     boot one board (or EWS_CONFIG, EWS_BOARD); the board's address
                                         must be this machine's (--no-address-check to skip the check)
  ews check-config --config FILE         validate; exit 2 listing every problem
  ews status --url URL [--user NAME | --token T]   the cluster's boards and devices (asks NAME's password; or EWS_TOKEN)
  ews hash-password                      ask a password twice (no echo), or read one line from a pipe; print its hash for auth.users[]
  ews gen-key                            print a new random cluster.key
  ews gen-signing-key [--out FILE]       write an Ed25519 key pair for release bundles (the public half is upgrade.publicKey)
  ews gen-cert --config FILE [--out DIR] [--days N]   make a cluster certificate (openssl) for tls
  ews calibrate --url URL [--write FILE] [--token T]   find a, b of U = a·R + b·W (content adaptation)
  ews restore --url URL --file F [--user NAME | --token T]   merge a backup (GET /api/backup) into every running board (admin)
  ews drain ID --url URL [--user NAME | --token T]     take board ID out of service: no new work, its work finishes (admin)
  ews undrain ID --url URL [--user NAME | --token T]   put a drained board back into service (admin)
  ews handover --url URL [--to ID] [--user NAME | --token T]   hand the master role to board ID (default: the next one) at once (admin)
  ews config push --url URL --config FILE [--user NAME | --token T]   one config for every board: live, or a rolling restart (admin)
  ews upgrade --url URL --bundle FILE [--user NAME | --token T]   a rolling upgrade to a signed release bundle, the master last (admin)
  ews rollback --url URL [--user NAME | --token T]   every board back to its previous release, one at a time, the master last (admin)
  ews upgrade-guard --prefix DIR         before a start: judge the release on trial (go back after 3 starts that did not confirm it)`;

const COMMANDS = [
  'start',
  'check-config',
  'status',
  'hash-password',
  'gen-key',
  'gen-signing-key',
  'gen-cert',
  'calibrate',
  'restore',
  'drain',
  'undrain',
  'handover',
  'config',
  'upgrade',
  'rollback',
  'upgrade-guard',
  'help',
];
const OPTIONS = ['config', 'board', 'boards', 'url', 'token', 'write', 'out', 'days', 'user', 'file', 'to', 'bundle', 'prefix', 'no-address-check', 'help'];

async function hashPasswordCmd(): Promise<number> {
  const pw = await readPassword(true);
  if (pw instanceof Error) return fail(pw.message);
  if (pw.length < 8) return fail('the password must have at least 8 characters');
  process.stdout.write(`${await hashPassword(pw)}\n`);
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string' },
        board: { type: 'string' },
        boards: { type: 'string' },
        url: { type: 'string' },
        token: { type: 'string' },
        write: { type: 'string' },
        out: { type: 'string' },
        days: { type: 'string' },
        user: { type: 'string' },
        file: { type: 'string' },
        to: { type: 'string' },
        bundle: { type: 'string' },
        prefix: { type: 'string' },
        'no-address-check': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: cmd === 'drain' || cmd === 'undrain' || cmd === 'config',
    }));
  } catch (e) {
    const option = /'(--?[\w-]+)'/.exec((e as Error).message)?.[1];
    const near = option ? nearMatch(option.replace(/^-+/, ''), OPTIONS) : undefined;
    return fail(`${(e as Error).message}${near ? ` (did you mean --${near}?)` : ''}\n${USAGE}`);
  }
  if (values.help || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  switch (cmd) {
    case 'start':
      return startBoard(values, USAGE);
    case 'check-config': {
      const cfg = loadOrFail(values.config as string | undefined, USAGE);
      if (typeof cfg === 'number') return cfg;
      try {
        if (cfg.tls) readTlsMaterial(cfg.tls);
      } catch (e) {
        return fail((e as Error).message);
      }
      if (cfg.stateDir === false) process.stdout.write(`note: "stateDir": false: ${MEMORY_ONLY_COST}\n`);
      else if (cfg.stateDir === undefined)
        process.stdout.write(`note: no stateDir: a board keeps its state in $STATE_DIRECTORY (systemd's StateDirectory=), else ${DEFAULT_STATE_DIR}, and refuses to start if it can write neither\n`);
      process.stdout.write(`ok: ${cfg.boards.length} boards, ${cfg.classes.length} classes, scheduler ${cfg.qos.scheduler}\n`);
      return 0;
    }
    case 'status':
      return status(values.url as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'hash-password':
      return hashPasswordCmd();
    case 'gen-cert': {
      const cfg = loadOrFail(values.config as string | undefined, USAGE);
      if (typeof cfg === 'number') return cfg;
      const days = Number(values.days ?? 3650);
      if (!Number.isInteger(days) || days < 1 || days > 36500) return fail('--days must be a whole number of days from 1 to 36500');
      try {
        const r = genCert(cfg, resolve((values.out as string | undefined) ?? '.'), days);
        process.stdout.write(
          `wrote ${r.caFile} (the cluster's CA: browsers trust this one), ${r.certFile} and ${r.keyFile} (the boards') for ${r.names.join(', ')}\n` +
            `keep ${r.caKeyFile} off the boards: it is needed only to make a certificate for a new board address\n` +
            `add to the config: "tls": ${JSON.stringify({ certFile: r.certFile, keyFile: r.keyFile, caFile: r.caFile })}\n`,
        );
        return 0;
      } catch (e) {
        return fail((e as Error).message, 1);
      }
    }
    case 'gen-key':
      process.stdout.write(`${randomBytes(32).toString('hex')}\n`);
      return 0;
    case 'gen-signing-key': {
      // The private key signs release bundles (npm run pack); the public one goes in upgrade.publicKey.
      const out = (values.out as string | undefined) ?? 'ews-signing.pem';
      if (existsSync(out)) return fail(`${out} exists: a signing key is never overwritten`);
      const k = newSigningKey();
      writeFileSync(out, k.privatePem, { mode: 0o600 });
      process.stdout.write(`private key written to ${out} (keep it off the boards)\nupgrade.publicKey: ${k.publicKey}\n`);
      return 0;
    }
    case 'calibrate': {
      if (!values.url) return fail('--url URL is required');
      try {
        await runCalibrate(
          values.url as string,
          {
            write: values.write as string | undefined,
            token: (values.token as string | undefined) ?? process.env.EWS_TOKEN,
            seconds: Number(process.env.EWS_CALIBRATE_SECONDS ?? 2),
            sizes: [1024, 16_384, 65_536, 262_144],
          },
          (l) => process.stdout.write(`${l}\n`),
        );
        return 0;
      } catch (e) {
        return fail(`calibration failed: ${(e as Error).message}`, 1);
      }
    }
    case 'drain':
    case 'undrain':
      if (positionals.length > 1) return fail(`one board at a time: ews ${cmd} ID --url URL`);
      return drainCmd(cmd === 'drain', positionals[0], values.url as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'handover':
      return handoverCmd(values.to as string | undefined, values.url as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'upgrade':
      return upgradeCmd(values.url as string | undefined, values.bundle as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'rollback':
      return rollbackCmd(values.url as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    case 'upgrade-guard': {
      // Run from the previous release before each start (the unit's ExecStartPre): judges a release on trial.
      if (!values.prefix) return fail('--prefix DIR is required');
      const said = guardStart(values.prefix as string);
      if (said) process.stdout.write(`${said}\n`);
      return 0;
    }
    case 'config':
      return configPushCmd(
        positionals[0],
        values.url as string | undefined,
        values.config as string | undefined,
        values.user as string | undefined,
        (values.token as string | undefined) ?? process.env.EWS_TOKEN,
      );
    case 'restore':
      return restoreCmd(values.url as string | undefined, values.file as string | undefined, values.user as string | undefined, (values.token as string | undefined) ?? process.env.EWS_TOKEN);
    default: {
      if (!cmd) return fail(USAGE);
      const near = nearMatch(cmd, COMMANDS);
      return fail(`unknown command ${cmd}${near ? ` (did you mean ${near}?)` : ''}\n${USAGE}`);
    }
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
