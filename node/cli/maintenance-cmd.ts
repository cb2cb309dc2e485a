// Maintenance as an admin (--user asks the password without echo; or --token T, EWS_TOKEN):
// `ews drain ID` / `ews undrain ID --url URL` take a board out of service and put it back (the
// drain answers once the board's work has finished, and names the devices no other board
// reaches); `ews handover [--to ID] --url URL` hands the master role to another board at once.

import { fail } from '../start.ts';
import { fetchError } from './fetch-error.ts';
import { login } from './status-cmd.ts';

type Answer = { message?: string; maintenance?: string[]; error?: { code?: string; message?: string } };

/** POST to an admin route (logging in first with --user), the answer's JSON, or the exit code of a failure (2: the board named does not exist). */
async function adminPost(url: string, target: URL, user: string | undefined, token: string | undefined, timeoutMs: number): Promise<Answer | number> {
  try {
    if (user) {
      const t = await login(url, user);
      if (t instanceof Error) return fail(t.message, 1);
      token = t;
    }
    const r = await fetch(target, { method: 'POST', headers: token ? { authorization: `Bearer ${token}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    const answer = (await r.json().catch(() => ({}))) as Answer;
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
