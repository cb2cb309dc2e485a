// `ews status`: the cluster's boards and devices, as one board sees them. With --user it logs in
// (the password asked without echo) instead of needing a token from curl.

import { fail } from '../start.ts';
import { fetchError } from './fetch-error.ts';
import { readPassword } from './password-prompt.ts';

interface ClusterJson {
  cluster: string;
  master: string | null;
  term: number;
  boards: Array<{ id: string; address: string; linknum: number; runstate: number; role: string }>;
}
interface AlarmJson {
  id: string;
  active: boolean;
  severity: string;
  message: string;
  since: number | null;
  acked: { user: string } | null;
}
interface DeviceJson {
  id: string;
  online: boolean;
  boards: string[];
  points: Record<string, unknown>;
  updatedAt: number | null;
  error: string | null;
}

export async function login(url: string, user: string): Promise<string | Error> {
  const password = await readPassword(false);
  if (password instanceof Error) return password;
  const r = await fetch(new URL('/api/login', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: user, password }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await r.json().catch(() => ({}))) as { token?: string; error?: { message?: string } };
  if (!r.ok || !body.token) return new Error(`login as ${user} refused: ${r.status} ${body.error?.message ?? ''}`.trim());
  return body.token;
}

const age = (at: number | null, now: number) => (at === null ? 'never' : `${((now - at) / 1000).toFixed(1)} s ago`);

export async function status(url: string | undefined, user: string | undefined, token: string | undefined): Promise<number> {
  if (!url) return fail('--url URL is required');
  try {
    if (user) {
      const t = await login(url, user);
      if (t instanceof Error) return fail(t.message, 1);
      token = t;
    }
    const get = async <T>(path: string): Promise<T | number> => {
      const r = await fetch(new URL(path, url), { signal: AbortSignal.timeout(5000), headers: token ? { authorization: `Bearer ${token}` } : {} });
      if (r.status === 401 || r.status === 403) return fail(`${url}: ${r.status}: pass --user NAME (or --token T, EWS_TOKEN)`, 1);
      if (!r.ok) return fail(`${url}${path}: ${r.status}`, 1);
      return (await r.json()) as T;
    };
    const v = await get<ClusterJson>('/api/cluster');
    if (typeof v === 'number') return v;
    const devices = await get<DeviceJson[]>('/api/devices');
    if (typeof devices === 'number') return devices;
    const alarms = await get<AlarmJson[]>('/api/alarms');
    if (typeof alarms === 'number') return alarms;
    const now = Date.now();
    const lines = [`cluster ${v.cluster}  master ${v.master ?? '(none)'}  term ${v.term}`, 'board      address          linknum  runstate  role'];
    for (const b of v.boards) lines.push(`${b.id.padEnd(10)} ${b.address.padEnd(16)} ${String(b.linknum).padStart(7)}  ${String(b.runstate).padStart(8)}  ${b.role}`);
    lines.push('', 'device     state    boards       read           points');
    for (const d of devices) {
      const points = Object.entries(d.points)
        .map(([k, x]) => `${k}=${JSON.stringify(x)}`)
        .join(' ');
      lines.push(
        `${d.id.padEnd(10)} ${(d.online ? 'online' : 'OFFLINE').padEnd(8)} ${d.boards.join(',').padEnd(12)} ${(d.updatedAt === null ? 'never read' : age(d.updatedAt, now)).padEnd(14)} ${d.online ? points : (d.error ?? '')}`,
      );
    }
    const active = alarms.filter((a) => a.active);
    lines.push('', active.length === 0 ? 'no active alarms' : 'alarm                      severity  since     acknowledged');
    for (const a of active) lines.push(`${a.message.slice(0, 26).padEnd(26)} ${a.severity.padEnd(9)} ${age(a.since, now).replace('read ', '').padEnd(9)} ${a.acked ? `by ${a.acked.user}` : 'NO'}`);
    process.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  } catch (e) {
    return fail(`cannot read the cluster: ${fetchError(url, e)}`, 1);
  }
}
