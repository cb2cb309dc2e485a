// Who is told when an alarm is raised or cleared, and how often it is repeated while nobody
// acknowledges it (part of parseConfig): webhooks (a signed JSON POST) and e-mail over SMTP.
import { isObj, num, type Raw, type Reader } from './config-reader.ts';

export type NotifyEvent = 'raised' | 'cleared' | 'repeat';
export const NOTIFY_EVENTS: readonly NotifyEvent[] = ['raised', 'cleared', 'repeat'];

export interface WebhookConfig {
  readonly url: string;
  /** HMAC-SHA256 key: the POST carries `X-EWS-Signature: sha256=<hex of HMAC(secret, body)>`. */
  readonly secret: string | undefined;
  readonly events: readonly NotifyEvent[];
}
export interface EmailConfig {
  readonly host: string;
  readonly port: number;
  /** TLS from the first byte (SMTPS, port 465). */
  readonly secure: boolean;
  /** Require STARTTLS on a plain connection (the default; false allows a server without it, on a trusted LAN). */
  readonly starttls: boolean;
  readonly user: string | undefined;
  readonly pass: string | undefined;
  readonly from: string;
  readonly to: readonly string[];
  readonly events: readonly NotifyEvent[];
}
export interface NotifyConfig {
  readonly webhooks: readonly WebhookConfig[];
  readonly email: EmailConfig | undefined;
  /** While an episode is raised and not acknowledged, it is sent again every this many minutes (0: never). */
  readonly repeatMin: number;
  /** Sends waiting (with their retries) at most; when full a repeat goes before a first raise. */
  readonly queueMax: number;
}

const ADDRESS_RE = /^[^\s@<>()",;:]{1,64}@[A-Za-z0-9.-]{1,253}$/;
const WEBHOOKS_MAX = 16;
const RECIPIENTS_MAX = 32;

function events(r: Reader, o: Raw, path: string): NotifyEvent[] {
  if (o.events === undefined) return [...NOTIFY_EVENTS];
  if (!Array.isArray(o.events) || o.events.length === 0) return (r.bad(`${path}.events`, `must be a non-empty list of ${NOTIFY_EVENTS.join(', ')}`), [...NOTIFY_EVENTS]);
  const out: NotifyEvent[] = [];
  o.events.forEach((e, i) => {
    const ev = NOTIFY_EVENTS.find((x) => x === e);
    if (ev) out.push(ev);
    else r.bad(`${path}.events[${i}]`, `must be one of ${NOTIFY_EVENTS.join(', ')}`);
  });
  return out;
}

export function readNotify(r: Reader, raw: Raw): NotifyConfig | undefined {
  const n = r.obj(raw, 'notify', '', ['webhooks', 'email', 'repeatMin', 'queueMax'], false);
  if (!n) return undefined;
  const webhooks: WebhookConfig[] = [];
  const list = r.arr(n, 'webhooks', 'notify', false) ?? [];
  if (list.length > WEBHOOKS_MAX) r.bad('notify.webhooks', `at most ${WEBHOOKS_MAX}`);
  list.forEach((w, i) => {
    const p = `notify.webhooks[${i}]`;
    if (!isObj(w)) {
      r.bad(p, 'must be an object');
      return;
    }
    r.noUnknown(w, p, ['url', 'secret', 'events']);
    const url = r.str(w, 'url', p);
    let ok = false;
    try {
      const u = new URL(url);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
    } catch {
      /* reported below */
    }
    if (url && !ok) r.bad(`${p}.url`, 'must be an http:// or https:// URL');
    const secret = w.secret === undefined ? undefined : r.str(w, 'secret', p);
    webhooks.push({ url, secret, events: events(r, w, p) });
  });
  let email: EmailConfig | undefined;
  const e = r.obj(n, 'email', 'notify', ['host', 'port', 'secure', 'starttls', 'user', 'pass', 'from', 'to', 'events'], false);
  if (e) {
    const p = 'notify.email';
    const host = r.str(e, 'host', p);
    if (host && !/^[A-Za-z0-9.-]{1,253}$/.test(host)) r.bad(`${p}.host`, 'must be a host name or IPv4 address');
    for (const k of ['secure', 'starttls'] as const) if (e[k] !== undefined && typeof e[k] !== 'boolean') r.bad(`${p}.${k}`, 'must be true or false');
    const secure = e.secure === true;
    const port = r.int(e, 'port', p, secure ? 465 : 587, 1, 65535);
    const user = e.user === undefined ? undefined : r.str(e, 'user', p);
    const pass = e.pass === undefined ? undefined : r.str(e, 'pass', p);
    if ((user === undefined) !== (pass === undefined)) r.bad(p, 'needs both user and pass, or neither');
    const from = r.str(e, 'from', p);
    if (from && !ADDRESS_RE.test(from)) r.bad(`${p}.from`, 'must be an e-mail address');
    const to: string[] = [];
    const rcpt = r.arr(e, 'to', p, true) ?? [];
    if (e.to !== undefined && (rcpt.length === 0 || rcpt.length > RECIPIENTS_MAX)) r.bad(`${p}.to`, `needs 1 to ${RECIPIENTS_MAX} addresses`);
    rcpt.forEach((a, i) => {
      if (typeof a === 'string' && ADDRESS_RE.test(a)) to.push(a);
      else r.bad(`${p}.to[${i}]`, 'must be an e-mail address');
    });
    email = { host, port, secure, starttls: e.starttls !== false, user, pass, from, to, events: events(r, e, p) };
  }
  const repeatMin = num(r, n, 'repeatMin', 'notify', 60, 0, 10_080);
  if (repeatMin > 0 && repeatMin < 0.05) r.bad('notify.repeatMin', 'must be 0 (never) or at least 0.05 (3 s)');
  const queueMax = r.int(n, 'queueMax', 'notify', 64, 1, 10_000);
  if (webhooks.length === 0 && !email) r.bad('notify', 'needs webhooks or email');
  return { webhooks, email, repeatMin, queueMax };
}
