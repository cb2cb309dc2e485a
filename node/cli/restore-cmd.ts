// `ews restore --url URL --file F`: a backup (GET /api/backup) merged into every running board,
// as an admin (--user asks the password without echo; or --token T, EWS_TOKEN).

import { readFileSync } from 'node:fs';
import { fail } from '../start.ts';
import { fetchError } from './fetch-error.ts';
import { login } from './status-cmd.ts';

export async function restoreCmd(url: string | undefined, file: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required');
  if (!file) return fail('--file F is required (a backup from GET /api/backup)');
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch (e) {
    return fail(`--file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    if (user) {
      const t = await login(url, user);
      if (t instanceof Error) return fail(t.message, 1);
      token = t;
    }
    const r = await fetch(new URL('/api/restore', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body,
      signal: AbortSignal.timeout(60_000),
    });
    const answer = (await r.json().catch(() => ({}))) as { boards?: Record<string, string>; error?: { code?: string; message?: string } };
    if (!r.ok) return fail(`${url}: ${r.status} ${answer.error?.code ?? ''}: ${answer.error?.message ?? ''}`.trim(), r.status === 400 ? 2 : 1);
    for (const [board, what] of Object.entries(answer.boards ?? {})) process.stdout.write(`${board}: ${what}\n`);
    return 0;
  } catch (e) {
    return fail(fetchError(url, e), 1);
  }
}
