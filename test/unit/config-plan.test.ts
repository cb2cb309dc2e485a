// What a pushed config changes, and how (shared/config-plan.ts); a board's own checks of it
// (node/config/config-apply.ts); alarm episodes across a live change (node/operator/alarms.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boardProblems, checkConfig, configMac } from '../../node/config/config-apply.ts';
import { Alarms } from '../../node/operator/alarms.ts';
import { parseConfig } from '../../shared/config.ts';
import { configPlan } from '../../shared/config-plan.ts';
import { EwsError } from '../../shared/errors.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const room = (id: string, port = '/dev/null') => ({ id, driver: 'line', attach: [{ board: 'b1', port }], points: { temp: { query: 'T?', parse: '^OK t=(-?[\\d.]+)' } } });
const raw = (over: Record<string, unknown> = {}) => ({
  cluster: { name: 'p', key: KEY },
  boards: [
    { id: 'b1', address: '127.0.0.1', httpPort: 8080 },
    { id: 'b2', address: '127.0.0.1', httpPort: 8081, udpPort: 5051 },
  ],
  auth: { disabled: true },
  devices: [room('room')],
  alarms: [{ id: 'hot', device: 'room', point: 'temp', above: 30 }],
  ...over,
});

test('devices, alarms, users, schedules, notify and QoS change live; ports, limits, a new set of classes or login turned on need a restart', () => {
  const a = parseConfig(raw());
  assert.deepEqual(configPlan(a, parseConfig(raw({ configVersion: 3 }))), { changed: [], restart: [] }, 'the version alone is no change');
  const live = configPlan(a, parseConfig(raw({ devices: [room('room'), room('hall')], alarms: [{ id: 'hot', device: 'room', point: 'temp', above: 25 }] })));
  assert.deepEqual(live, { changed: ['devices', 'alarms'], restart: [] });
  const port = parseConfig(
    raw({
      boards: [
        { id: 'b1', address: '127.0.0.1', httpPort: 8080 },
        { id: 'b2', address: '127.0.0.1', httpPort: 9000, udpPort: 5051 },
      ],
    }),
  );
  assert.deepEqual(configPlan(a, port).restart, ['boards']);
  assert.deepEqual(configPlan(a, parseConfig(raw({ limits: { serialQueueMax: 8 } }))).restart, ['limits']);
  assert.deepEqual(configPlan(a, parseConfig(raw({ qos: { scheduler: 'fifo' } }))), { changed: ['qos'], restart: [] }, 'QoS is live (the dispatch core is made again when idle)');
  const login = configPlan(
    a,
    parseConfig(raw({ auth: { users: [{ name: 'ada', role: 'admin', passwordHash: 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g' }] } })),
  );
  assert.deepEqual([login.changed, login.restart], [['auth'], ['auth.disabled']]);
  const classes = configPlan(
    a,
    parseConfig(
      raw({
        classes: [
          { name: 'HIGH', match: [{ pathPrefix: '/cgi-bin/' }] },
          { name: 'LOW', match: [] },
          { name: 'BULK', match: [] },
        ],
      }),
    ),
  );
  assert.ok(
    classes.restart.some((r) => r.startsWith('classes')),
    JSON.stringify(classes),
  );
});

test('a pushed config is checked whole: every problem named at once; a port the board lacks is its own problem; the MAC depends on key and body', () => {
  assert.throws(
    () => checkConfig(JSON.stringify(raw({ colour: 'blue', limits: { bodyBytesMax: -1 } }))),
    (e: unknown) => e instanceof EwsError && e.code === 'BAD_CONFIG' && e.problems!.length >= 2 && e.problems!.some((p) => p.startsWith('colour')),
  );
  assert.throws(
    () => checkConfig('{"cluster":'),
    (e: unknown) => e instanceof EwsError && e.code === 'BAD_CONFIG',
  );
  const { next } = checkConfig(JSON.stringify(raw({ devices: [room('room'), room('hall', '/dev/ews-no-such-port')], alarms: [] })));
  assert.deepEqual(boardProblems(next, next.boards[0]!), ['devices.hall: serial port /dev/ews-no-such-port does not exist on board b1']);
  assert.deepEqual(boardProblems(next, next.boards[1]!), [], 'not attached there');
  const k = Buffer.from(KEY, 'hex');
  assert.notEqual(configMac(k, Buffer.from('a')), configMac(k, Buffer.from('b')));
  assert.notEqual(configMac(k, Buffer.from('a')), configMac(Buffer.alloc(32, 7), Buffer.from('a')));
});

test('a live alarm change keeps the episodes of the alarms that stay and takes their new thresholds', () => {
  const alarms = new Alarms([{ id: 'hot', device: 'room', point: 'temp', above: 30, below: undefined, equals: undefined, hysteresis: 0, severity: 'warning', message: 'hot' }], ['room'], ['b1']);
  const boards = [{ id: 'b1', runstate: 1 }];
  alarms.evaluate({ devices: [{ id: 'room', online: true, points: { temp: 35 } }], boards }, 1000);
  assert.equal(alarms.get('hot')!.active, true);
  alarms.reconfigure(
    [{ id: 'hot', device: 'room', point: 'temp', above: 50, below: undefined, equals: undefined, hysteresis: 0, severity: 'critical', message: 'very hot' }],
    ['room', 'hall'],
    ['b1'],
  );
  const hot = alarms.get('hot')!;
  assert.deepEqual([hot.active, hot.since, hot.severity, hot.message], [true, 1000, 'critical', 'very hot'], 'the episode stays, the rule is new');
  assert.ok(alarms.has('device-offline-hall'), 'a new device gets its built-in alarm');
  alarms.evaluate({ devices: [{ id: 'room', online: true, points: { temp: 35 } }], boards }, 2000);
  assert.equal(alarms.get('hot')!.active, false, 'cleared under the new threshold');
});
