// Alarm notifications against a real SMTP server (Debian's python3-aiosmtpd) and a local webhook
// receiver: one message per transition, reminders until acknowledged, a dead webhook retried and
// counted without blocking anything, and exactly one raise across a SIGKILL of the master between
// the raise and the send.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { converged, freePorts, getJson, makeCluster, metric, type TestCluster, waitFor } from './harness.ts';

const SECRET = 'hook-secret-1';
const SMTPD = `
import json, sys, threading
from aiosmtpd.controller import Controller
class Handler:
    async def handle_DATA(self, server, session, envelope):
        print(json.dumps({"from": envelope.mail_from, "to": envelope.rcpt_tos, "data": envelope.content.decode("utf8", "replace")}), flush=True)
        return "250 OK"
c = Controller(Handler(), hostname="127.0.0.1", port=int(sys.argv[1]))
c.start()
print(json.dumps({"listening": True}), flush=True)
threading.Event().wait()
`;

interface Mail {
  from: string;
  to: string[];
  data: string;
}
interface Hook {
  event: string;
  repeat: number;
  alarm: { id: string; since: number };
}

describe('alarm notifications', () => {
  let c: TestCluster;
  let smtpd: ChildProcess;
  let hookServer: http.Server | undefined;
  const mails: Mail[] = [];
  const hooks: Hook[] = [];
  const badSignatures: string[] = [];
  let hookPort = 0;

  before(async () => {
    const [smtpPort, hp] = await freePorts(2);
    hookPort = hp!;
    smtpd = spawn('/usr/bin/python3', ['-u', '-c', SMTPD, String(smtpPort)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    let listening = false;
    smtpd.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const m = JSON.parse(buf.slice(0, i)) as Mail & { listening?: boolean };
        buf = buf.slice(i + 1);
        if (m.listening) listening = true;
        else mails.push(m);
      }
    });
    await waitFor('the SMTP server', async () => listening);
    c = await makeCluster(
      3,
      (cfg) => {
        cfg.devices = demoDevices(['b1', 'b2', 'b3']);
        cfg.alarms = [{ id: 'valve-open', device: 'valve3', point: 'position', above: 50, severity: 'critical', message: 'outlet valve open' }];
        cfg.notify = {
          repeatMin: 0.05,
          webhooks: [{ url: `http://127.0.0.1:${hookPort}/hook`, secret: SECRET }],
          email: { host: '127.0.0.1', port: smtpPort, starttls: false, from: 'ews@plant.example', to: ['ops@plant.example', 'night@plant.example'] },
        };
      },
      { args: ['--simulate-devices'] },
    );
    await converged(c, undefined, undefined, (v) => v.master === 'b1');
  });
  after(async () => {
    if (process.env.DEBUG_LOGS) for (const [id, l] of c.logs) console.log(id, l.slice(-3000), JSON.stringify(mails).slice(0, 2000));
    await c?.stop();
    smtpd?.kill();
    await new Promise<void>((r) => (hookServer ? hookServer.close(() => r()) : r()));
  });

  const u = (id: string) => c.boards.find((b) => b.id === id)!.url;
  const post = (id: string, path: string, body: unknown = {}) =>
    fetch(`${u(id)}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  // The test is about valve-open's messages. Under load the run lasts long enough for the board-down
  // alarm of the killed master (held 3 s) to be raised and notified too: that one is not counted here.
  const subjects = (what: RegExp) => mails.filter((m) => /^X-Ews-Alarm: valve-open\r?$/m.test(m.data) && what.test(/^Subject: (.*)$/m.exec(m.data)?.[1] ?? ''));
  const valveHooks = () => hooks.filter((h) => h.alarm.id === 'valve-open');

  test('one message per transition, reminders until acknowledged; a dead webhook is retried and counted and blocks nothing; exactly one raise across a master SIGKILL before its send', async (t) => {
    assert.equal((await post('b1', '/cgi-bin/devices/valve3/set', { value: 80 })).status, 200);
    await waitFor('the raise by e-mail', async () => subjects(/\] RAISED critical: outlet valve open/).length === 1, 20_000);
    const raise = subjects(/\] RAISED critical/)[0]!;
    assert.deepEqual([raise.from, raise.to], ['ews@plant.example', ['ops@plant.example', 'night@plant.example']]);
    // The webhook's host is not listening: its raise is retried, counted, and nothing waits for it.
    await waitFor('the webhook retried', async () => (await metric(u('b1'), 'ews_notify_failed_total', { target: 'webhook-0' })) >= 2, 15_000);
    assert.equal((await post('b1', '/cgi-bin/devices/pump1/start')).status, 200, 'commands are served meanwhile');
    await waitFor('a reminder', async () => subjects(/STILL RAISED \(reminder 1\)/).length === 1, 15_000);
    // The master dies before the webhook ever took the raise; its e-mail raise is on every board's log.
    await waitFor('the e-mail raise and reminder recorded on b2', async () => {
      const sent = (await getJson<Array<{ kind: string; text: string }>>(`${u('b2')}/api/log`)).filter((e) => e.kind === 'notify').map((e) => e.text);
      return sent.includes('raised → email: sent') && sent.includes('repeat 1 → email: sent');
    });
    await c.kill('b1');
    hookServer = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const want = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
        if (req.headers['x-ews-signature'] !== want) badSignatures.push(String(req.headers['x-ews-signature']));
        hooks.push(JSON.parse(body) as Hook);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => hookServer!.listen(hookPort, '127.0.0.1', () => r()));
    const master = (await converged(c, ['b2', 'b3'], ['b2', 'b3'], (v) => v.master !== 'b1')).master!;
    await waitFor('the raise by webhook, from the new master', async () => valveHooks().some((h) => h.event === 'raised'), 20_000);
    const since = valveHooks().find((h) => h.event === 'raised')!.alarm.since;
    // Acknowledged: no more reminders once the one in flight is out; then cleared.
    assert.equal((await post(master, '/api/alarms/valve-open/ack')).status, 200);
    const remindersAtAck = subjects(/STILL RAISED/).length;
    assert.equal((await post(master, '/cgi-bin/devices/valve3/set', { value: 10 })).status, 200);
    await waitFor('the clear by e-mail and webhook', async () => subjects(/CLEARED/).length === 1 && valveHooks().some((h) => h.event === 'cleared'), 20_000);
    const reminders = subjects(/STILL RAISED/).map((m) => Number(/reminder (\d+)/.exec(m.data)![1]));
    const doubled = reminders.length - new Set(reminders).size;
    t.diagnostic(
      `e-mail reminders ${reminders.join(', ')} (${doubled} sent twice across the master's death); webhook events ${valveHooks()
        .map((h) => `${h.event}${h.repeat || ''}`)
        .join(', ')}`,
    );
    assert.equal(subjects(/\] RAISED critical/).length, 1, 'one raise by e-mail, across the failover');
    assert.equal(valveHooks().filter((h) => h.event === 'raised').length, 1, 'one raise by webhook');
    assert.ok(
      valveHooks().every((h) => h.alarm.since === since),
      'one episode',
    );
    assert.equal(subjects(/CLEARED/).length, 1);
    assert.equal(valveHooks().filter((h) => h.event === 'cleared').length, 1);
    assert.ok(reminders.length <= remindersAtAck + 1, `no reminder after the acknowledgement but the one in flight (${remindersAtAck} at the ack, ${reminders.length} now)`);
    assert.deepEqual(badSignatures, [], 'every webhook POST signed');
    assert.equal(doubled, 0, 'no reminder twice: each was on the new master before the old one died');
    // The new master counts every raise it sent by webhook: valve-open's, and board-down-b1's if it came.
    await waitFor(
      'the sent raises counted',
      async () => (await metric(u(master), 'ews_notify_sent_total', { target: 'webhook-0', event: 'raised' })) === hooks.filter((h) => h.event === 'raised').length,
    );
  });
});
