// Alarm notifications, sent by the master: webhooks (a JSON POST, HMAC-signed when a secret is
// set; https verified) and e-mail over SMTP (nodemailer, loaded only when configured). What is
// due comes from the pure planner (master/notify-plan.ts) every second; sends run at most
// SENDS_AT_ONCE at a time, each with a timeout, from a bounded queue with retries, so a dead host
// never blocks the master. A send that succeeds is an audit entry (kind `notify`), which every
// board holds and keeps on disk: the next master reads from it what was already sent.
import { createHmac } from 'node:crypto';
import { ATTEMPTS_MAX, type Delivery, dueDeliveries, type Episode, NotifyQueue, SentBook, sentEntry, sentKey, type Target } from '../../master/notify-plan.ts';
import type { Config } from '../../shared/config.ts';
import type { Registry } from '../../shared/metrics.ts';
import type { EmailConfig, NotifyConfig } from '../../shared/notify-config.ts';
import type { Logger } from '../log.ts';
import { ACK_SLACK_MS, type AlarmView } from '../operator/alarms.ts';
import type { OperatorState } from '../operator/operator-state.ts';

const TICK_MS = 1000;
const SENDS_AT_ONCE = 2;
const SEND_TIMEOUT_MS = 10_000;

type Mailer = { sendMail(m: Record<string, unknown>): Promise<unknown>; close(): void };

const targetsOf = (n: NotifyConfig): Target[] => [...n.webhooks.map((w, i) => ({ name: `webhook-${i}`, events: w.events })), ...(n.email ? [{ name: 'email', events: n.email.events }] : [])];

export class Notifier {
  private readonly queue: NotifyQueue;
  private targets: Target[];
  private timer: NodeJS.Timeout | undefined;
  private mailer: Promise<Mailer> | undefined;
  private readonly sent = new Map<string, number>();
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly cfg: Config,
    private n: NotifyConfig,
    private readonly op: () => OperatorState,
    private readonly log: Logger,
    metrics: Registry,
  ) {
    this.queue = new NotifyQueue(n.queueMax);
    this.targets = targetsOf(n);
    const byKey = (m: Map<string, number>, labels: (k: string) => Record<string, string>) => () => [...m].map(([k, v]) => [labels(k), v] as [Record<string, string>, number]);
    metrics.counterOf(
      'ews_notify_sent_total',
      'Alarm notifications sent, by target and event',
      byKey(this.sent, (k) => ({ target: k.split(' ')[0]!, event: k.split(' ')[1]! })),
    );
    metrics.counterOf(
      'ews_notify_failed_total',
      'Notification attempts that failed (each is retried with backoff)',
      byKey(this.failures, (k) => ({ target: k })),
    );
    metrics.counterOf('ews_notify_dropped_total', 'Notifications not sent: the queue was full (repeats go first) or every attempt failed', () =>
      Object.entries(this.queue.dropped).map(([reason, v]) => [{ reason }, v]),
    );
    metrics.gauge('ews_notify_queue', 'Notifications waiting to be sent or retried', () => [[{}, this.queue.size]]);
  }

  /** A pushed config's notify section, live (the queue bound stays what the board started with). */
  retarget(n: NotifyConfig): void {
    this.n = n;
    this.targets = targetsOf(n);
    if (this.mailer) {
      const old = this.mailer;
      this.mailer = undefined;
      void old.then(
        (m) => m.close(),
        () => {},
      );
    }
  }

  /** This board became master (true) or stepped down. */
  setMaster(master: boolean): void {
    if (master && !this.timer) {
      this.timer = setInterval(() => this.tick(), TICK_MS);
      this.timer.unref();
      this.tick();
    } else if (!master && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.queue.clear();
    }
  }

  close(): void {
    this.setMaster(false);
    void this.mailer?.then(
      (m) => m.close(),
      () => {},
    );
  }

  /** What was sent (the audit log, every board's copy) and what is queued here decide what is due. */
  private tick(now = Date.now()): void {
    const op = this.op();
    const keys: string[] = [];
    for (const e of op.log.since(0)) {
      const k = e.kind === 'notify' ? sentKey(e.subject, e.text) : undefined;
      if (k) keys.push(k);
    }
    const known = new SentBook(keys, ACK_SLACK_MS);
    const episodes: Episode[] = op.alarms.list().map((a) => ({ id: a.id, active: a.active, since: a.since, clearedAt: a.clearedAt, acked: a.acked !== null }));
    for (const d of dueDeliveries(episodes, this.targets, known, this.n.repeatMin * 60_000, now)) {
      if (this.queue.has(d.key)) continue;
      if (!this.queue.add(d, now)) this.log.warn({ alarm: d.alarm, event: d.event, target: d.target }, 'notification queue full: dropped');
    }
    for (const d of this.queue.take(now, SENDS_AT_ONCE)) void this.send(d, op);
  }

  private async send(d: Delivery, op: OperatorState): Promise<void> {
    const alarm = op.alarms.get(d.alarm);
    try {
      if (!alarm) throw new Error('no such alarm');
      const event = this.event(d, alarm);
      if (d.target === 'email') await this.mail(this.n.email!, event, alarm, d.since);
      else await this.post(this.n.webhooks[Number(d.target.slice('webhook-'.length))]!, event, d.key);
      this.queue.done(d.key);
      this.sent.set(`${d.target} ${d.event}`, (this.sent.get(`${d.target} ${d.event}`) ?? 0) + 1);
      op.record('notify', sentEntry(d));
    } catch (e) {
      this.failures.set(d.target, (this.failures.get(d.target) ?? 0) + 1);
      const gaveUp = this.queue.failed(d.key, Date.now());
      this.log.warn({ alarm: d.alarm, event: d.event, target: d.target, err: (e as Error).message, gaveUp }, 'notification not sent');
      if (gaveUp) op.record('notify', { subject: `${d.alarm}@${d.since}`, text: `${d.event} → ${d.target}: failed ${ATTEMPTS_MAX} times (${(e as Error).message})`.slice(0, 160) });
    }
  }

  private event(d: Delivery, a: AlarmView): Record<string, unknown> {
    return {
      event: d.event,
      repeat: d.n,
      cluster: this.cfg.cluster.name,
      alarm: { id: a.id, kind: a.kind, subject: a.subject, severity: a.severity, message: a.message, since: d.since, clearedAt: a.clearedAt, value: a.value, acked: a.acked },
      at: Date.now(),
    };
  }

  private async post(w: NotifyConfig['webhooks'][number], event: Record<string, unknown>, key: string): Promise<void> {
    const body = JSON.stringify(event);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-ews-event': String(event.event), 'x-ews-delivery': key };
    if (w.secret) headers['x-ews-signature'] = `sha256=${createHmac('sha256', w.secret).update(body).digest('hex')}`;
    const r = await fetch(w.url, { method: 'POST', headers, body, redirect: 'error', signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
    await r.arrayBuffer().catch(() => undefined);
    if (r.status < 200 || r.status > 299) throw new Error(`webhook answered ${r.status}`);
  }

  private async mail(e: EmailConfig, event: Record<string, unknown>, a: AlarmView, since: number): Promise<void> {
    this.mailer ??= import('nodemailer').then((m) =>
      m.createTransport({
        host: e.host,
        port: e.port,
        secure: e.secure,
        requireTLS: !e.secure && e.starttls,
        ignoreTLS: !e.secure && !e.starttls,
        ...(e.user ? { auth: { user: e.user, pass: e.pass } } : {}),
        connectionTimeout: SEND_TIMEOUT_MS,
        greetingTimeout: SEND_TIMEOUT_MS,
        socketTimeout: SEND_TIMEOUT_MS,
      }),
    );
    const mailer = await this.mailer;
    const what = event.event === 'cleared' ? 'CLEARED' : event.event === 'repeat' ? `STILL RAISED (reminder ${String(event.repeat)})` : 'RAISED';
    await mailer.sendMail({
      from: e.from,
      to: e.to.join(', '),
      subject: `[${this.cfg.cluster.name}] ${what} ${a.severity}: ${a.message}`,
      text: `${what}: ${a.message}\nalarm ${a.id} (${a.severity}) on ${a.subject}\nsince ${new Date(since).toISOString()}${a.value !== null ? `\nvalue ${String(a.value)}` : ''}${a.acked ? `\nacknowledged by ${a.acked.user}` : '\nnot acknowledged'}\n`,
      headers: { 'X-EWS-Event': String(event.event), 'X-EWS-Alarm': a.id },
    });
  }
}
