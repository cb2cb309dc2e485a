// Maintenance as an admin (--user asks the password without echo; or --token T, EWS_TOKEN):
// `ews drain ID` / `ews undrain ID --url URL` take a board out of service and put it back (the
// drain answers once the board's work has finished, and names the devices no other board
// reaches); `ews handover [--to ID] --url URL` hands the master role to another board at once;
// `ews config push --url URL --config FILE` gives the cluster one config (a report per board).
import { readFileSync } from 'node:fs';

import { fail } from '../start.ts';
import { fetchError } from './fetch-error.ts';
import { login } from './status-cmd.ts';

type Answer = {
  from?: string;
  to?: string;
  stopped?: string | null;
  message?: string;
  maintenance?: string[];
  configVersion?: number;
  restart?: string[];
  master?: string;
  boards?: Record<string, string>;
  error?: { code?: string; message?: string; problems?: string[] };
};

/** POST to an admin route (logging in first with --user), the answer's JSON, or the exit code of a failure (2: the board named does not exist). */
async function adminPost(
  url: string,
  target: URL,
  user: string | undefined,
  token: string | undefined,
  timeoutMs: number,
  send?: { method: 'PUT' | 'POST'; body: string | Buffer; type: string },
): Promise<Answer | number> {
  try {
    if (user) {
      const t = await login(url, user);
      if (t instanceof Error) return fail(t.message, 1);
      token = t;
    }
    const headers: Record<string, string> = { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(send ? { 'content-type': send.type } : {}) };
    const r = await fetch(target, { method: send?.method ?? 'POST', headers, body: send?.body, signal: AbortSignal.timeout(timeoutMs) });
    const answer = (await r.json().catch(() => ({}))) as Answer;
    if (answer.error?.problems) return fail(`${url}: ${r.status} ${answer.error.code}:\n${answer.error.problems.join('\n')}`, 2);
    if (!r.ok) return fail(`${url}: ${r.status} ${answer.error?.code ?? ''}: ${answer.error?.message ?? ''}`.trim(), r.status === 404 ? 2 : 1);
    return answer;
  } catch (e) {
    return fail(fetchError(url, e), 1);
  }
}

export async function drainCmd(on: boolean, board: string | undefined, url: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!board) return fail(`usage: ews ${on ? 'drain' : 'undrain'} ID --url URL (the board's id)`);
  if (!url) return fail('--url URL is required');
  const answer = await adminPost(url, new URL(`/api/boards/${encodeURIComponent(board)}/${on ? 'drain' : 'undrain'}`, url), user, token, 120_000);
  if (typeof answer === 'number') return answer;
  process.stdout.write(`${answer.message ?? 'done'}\n`);
  if (answer.maintenance && answer.maintenance.length > 0) process.stdout.write(`in maintenance (no board reaches them): ${answer.maintenance.join(', ')}\n`);
  return 0;
}

export async function handoverCmd(to: string | undefined, url: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required');
  const target = new URL('/api/cluster/handover', url);
  if (to) target.searchParams.set('to', to);
  const answer = await adminPost(url, target, user, token, 30_000);
  if (typeof answer === 'number') return answer;
  process.stdout.write(`${answer.message ?? 'done'}\n`);
  return 0;
}

export async function configPushCmd(sub: string | undefined, url: string | undefined, file: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (sub !== 'push') return fail('usage: ews config push --url URL --config FILE');
  if (!url) return fail('--url URL is required');
  if (!file) return fail('--config FILE is required');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return fail(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  // A rolling restart waits for every board in turn.
  const answer = await adminPost(url, new URL('/api/config', url), user, token, 600_000, { method: 'PUT', body: text, type: 'application/json' });
  if (typeof answer === 'number') return answer;
  process.stdout.write(`config ${answer.configVersion}: ${answer.restart?.length ? `rolling restart (${answer.restart.join(', ')})` : 'applied live'}\n`);
  const boards = Object.entries(answer.boards ?? {});
  for (const [id, what] of boards) process.stdout.write(`  ${id}: ${what}\n`);
  return boards.every(([, what]) => /^(applied|restart|down|already)/.test(what)) ? 0 : 1;
}

/** `ews upgrade --url URL --bundle FILE`: a rolling upgrade of the cluster (asked of the master, or the VIP). */
export async function upgradeCmd(url: string | undefined, file: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required (the master, or the cluster address)');
  if (!file) return fail('--bundle FILE is required (npm run pack makes one)');
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch (e) {
    return fail(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return rolloutReport(await adminPost(url, new URL('/api/upgrade', url), user, token, 3_600_000, { method: 'POST', body, type: 'application/octet-stream' }));
}

/** `ews rollback --url URL`: every board back to its previous release, the same way. */
export async function rollbackCmd(url: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required (the master, or the cluster address)');
  return rolloutReport(await adminPost(url, new URL('/api/upgrade/rollback', url), user, token, 3_600_000));
}

function rolloutReport(answer: Answer | number): number {
  if (typeof answer === 'number') return answer;
  process.stdout.write(`upgrade ${answer.from} → ${answer.to}${answer.stopped ? `: stopped at ${answer.stopped}` : ''}\n`);
  for (const [id, what] of Object.entries(answer.boards ?? {})) process.stdout.write(`  ${id}: ${what}\n`);
  return answer.stopped ? 1 : 0;
}
