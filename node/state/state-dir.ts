// Where a board keeps what must survive a restart (boot epoch, intents, logouts, history, the
// audit log, alarm episodes). Durable by default: the config's stateDir, else systemd's
// $STATE_DIRECTORY (the unit's StateDirectory=ews), else /var/lib/ews when it can be created and
// written. `"stateDir": false` is the explicit memory-only mode. Resolved once, at `ews start`.
import { accessSync, constants, mkdirSync } from 'node:fs';

export const DEFAULT_STATE_DIR = '/var/lib/ews';

/** What memory-only costs, for check-config and the board's log. */
export const MEMORY_ONLY_COST =
  'state is kept in memory only: after a restart logged-out sessions work again, a command started just before a crash may run again on retry, and history, the audit log and alarm acknowledgements are lost';

export type StateDirChoice = { dir: string | undefined; from: 'config' | 'STATE_DIRECTORY' | 'default' | 'memory' } | { problem: string };

/** A directory this process can create and write, or why not. */
function writable(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.W_OK | constants.X_OK);
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
}

export function resolveStateDir(configured: string | false | undefined, env: NodeJS.ProcessEnv = process.env, fallback = DEFAULT_STATE_DIR): StateDirChoice {
  if (configured === false) return { dir: undefined, from: 'memory' };
  if (configured !== undefined) {
    const why = writable(configured);
    return why ? { problem: `stateDir: cannot create or write "${configured}" (${why})` } : { dir: configured, from: 'config' };
  }
  // systemd may list several, separated by colons; the first is this unit's.
  const fromEnv = env.STATE_DIRECTORY?.split(':')[0];
  if (fromEnv) {
    const why = writable(fromEnv);
    return why ? { problem: `stateDir: $STATE_DIRECTORY "${fromEnv}" cannot be created or written (${why})` } : { dir: fromEnv, from: 'STATE_DIRECTORY' };
  }
  const why = writable(fallback);
  if (!why) return { dir: fallback, from: 'default' };
  return {
    problem: `stateDir: none is set, $STATE_DIRECTORY is unset, and ${fallback} cannot be created or written (${why}): set "stateDir" to a writable directory, or "stateDir": false to run with ${MEMORY_ONLY_COST.replace('state is kept', 'state kept')}`,
  };
}
