import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, parseConfig, startProblems } from '../../shared/config.ts';
import { cronMatches, localTime } from '../../shared/cron.ts';
import { SCHEDULES_MAX } from '../../shared/device-config.ts';

const KEY = 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4';
const valid = () => ({
  cluster: { name: 'plant-a', key: KEY },
  boards: [
    { id: 'ews1', address: '10.0.0.11' },
    { id: 'ews2', address: '10.0.0.12' },
  ],
  auth: { disabled: true },
});
const problems = (raw: unknown): string[] => {
  try {
    parseConfig(raw);
    return [];
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    return [...e.problems];
  }
};

test('a minimal config gets the documented defaults and is frozen', () => {
  const c = parseConfig(valid());
  assert.equal(c.cluster.heartbeatMs, 20);
  assert.equal(c.cluster.tmaxMs, 120);
  assert.equal(c.cluster.broadcast, 'peers');
  assert.equal(c.boards[1]!.httpPort, 80);
  assert.equal(c.boards[1]!.index, 1);
  assert.deepEqual(
    c.classes.map((k) => [k.name, k.priority]),
    [
      ['control', 0],
      ['browse', 1],
    ],
  );
  assert.equal(c.qos.scheduler, 'priority');
  assert.equal(c.limits.queueMax, 1000);
  assert.ok(Object.isFrozen(c.cluster) && Object.isFrozen(c.boards[0]));
});

test('every problem is reported as path: problem, all at once', () => {
  const raw = valid() as Record<string, any>; // any: a raw JSON fixture we mutate freely
  raw.cluster.key = 'abcd';
  raw.cluster.heartbeatMs = 300;
  raw.cluster.tmaxMs = 500;
  raw.boards.push({ id: 'ews1', address: 'nope', colour: 'red' });
  raw.limits = { queueMax: 0 };
  raw.bogus = 1;
  raw.qos = { periodMs: 1 }; // read after the first batch of checks: it used to go unreported
  raw.cluster.masterWork = 'sometimes';
  const p = problems(raw);
  for (const want of [
    'cluster.key: too short',
    'cluster.tmaxMs: must be more than 2 × heartbeatMs',
    'boards[2].address: must be an IPv4 address',
    'boards[2].colour: unknown key',
    'boards[2].id: duplicate of boards[0]',
    'limits.queueMax: must be between 1 and',
    'bogus: unknown key',
    'qos.periodMs: must be between 10 and 600000',
    'cluster.masterWork: must be "forward", "spill" or "share"',
  ])
    assert.ok(
      p.some((x) => x.includes(want)),
      `missing "${want}" in\n${p.join('\n')}`,
    );
});

test('cluster.planeThread: a boolean, true by default; false needs a Tmax of at least 1 s, at the bound', () => {
  assert.equal(parseConfig(valid()).cluster.planeThread, true);
  const inline = (extra: Record<string, unknown>) => problems({ ...valid(), cluster: { ...valid().cluster, planeThread: false, ...extra } });
  assert.deepEqual(inline({ heartbeatMs: 100, tmaxMs: 1000 }), []);
  assert.equal(parseConfig({ ...valid(), cluster: { ...valid().cluster, planeThread: false, heartbeatMs: 100, tmaxMs: 1000 } }).cluster.planeThread, false);
  const short = inline({ heartbeatMs: 100, tmaxMs: 999 });
  assert.ok(
    short.some((x) => x.startsWith('cluster.planeThread: false needs cluster.tmaxMs ≥ 1000 (it is 999)')),
    short.join('\n'),
  );
  // The default Tmax (120 ms) with the plane on the request thread is refused, not silently kept.
  assert.ok(inline({}).some((x) => x.startsWith('cluster.planeThread:')));
  assert.ok(problems({ ...valid(), cluster: { ...valid().cluster, planeThread: 'no' } }).includes('cluster.planeThread: must be true or false'));
});

test('cluster.rehearseRequests and rehearseEveryMs: defaults, 0 turns rehearsal off, bounds named', () => {
  const c = parseConfig(valid()).cluster;
  assert.deepEqual([c.rehearseRequests, c.rehearseEveryMs], [1000, 300_000]);
  const with_ = (extra: Record<string, unknown>) => ({ ...valid(), cluster: { ...valid().cluster, ...extra } });
  assert.equal(parseConfig(with_({ rehearseRequests: 0 })).cluster.rehearseRequests, 0);
  assert.deepEqual(problems(with_({ rehearseRequests: 10_000, rehearseEveryMs: 10_000 })), []);
  const p = problems(with_({ rehearseRequests: 10_001, rehearseEveryMs: 9_999 }));
  assert.ok(
    p.some((x) => x.startsWith('cluster.rehearseRequests: must be between 0 and 10000')),
    p.join('\n'),
  );
  assert.ok(
    p.some((x) => x.startsWith('cluster.rehearseEveryMs: must be between 10000 and 86400000')),
    p.join('\n'),
  );
});

test('a limit under its old name is reported with its new name', () => {
  const raw = valid() as Record<string, any>; // any: a raw JSON fixture we mutate freely
  raw.limits = { maxQueue: 10, maxInFlightPerBoard: 4 };
  raw.classes = [{ name: 'c', match: [{ pathPrefix: '/' }], maxQueue: 5 }];
  const p = problems(raw);
  for (const want of ['limits.maxQueue: was renamed queueMax', 'limits.maxInFlightPerBoard: was renamed inFlightPerBoardMax', 'classes[0].maxQueue: was renamed queueMax'])
    assert.ok(
      p.some((x) => x.includes(want)),
      `missing "${want}" in\n${p.join('\n')}`,
    );
});

test('missing key, bad broadcast, bad vip, bad class rules, bad scheduler', () => {
  const raw = valid() as Record<string, any>; // any: a raw JSON fixture we mutate freely
  delete raw.cluster.key;
  raw.cluster.broadcast = 'everyone';
  raw.cluster.vip = { address: '10.0.0.100', interface: 'eth0' };
  raw.classes = [
    { name: 'c', match: [{ regex: '(' }] },
    { name: 'c', match: [{}] },
  ];
  raw.qos = { scheduler: 'lottery' };
  const p = problems(raw).join('\n');
  for (const want of [
    'cluster.key: is required',
    'cluster.broadcast:',
    'cluster.vip.address:',
    'classes[0].match[0].regex:',
    'classes[1].name: duplicate',
    'classes[1].match[0]: needs',
    'qos.scheduler:',
  ])
    assert.ok(p.includes(want), `missing ${want} in\n${p}`);
});

test('start refuses a config without an auth section; auth.disabled must be explicit', () => {
  const raw = valid() as Record<string, unknown>;
  delete raw.auth;
  assert.match(startProblems(parseConfig(raw))[0]!, /^auth: is required/);
  assert.deepEqual(startProblems(parseConfig(valid())), []);
  assert.ok(problems({ ...valid(), auth: {} }).some((p) => p.startsWith('auth.users')));
});

test('broadcast mode needs every board on the cluster UDP port', () => {
  const raw = valid() as Record<string, any>; // any: a raw JSON fixture we mutate freely
  raw.cluster.broadcast = '10.0.0.255';
  raw.boards[1].udpPort = 6000;
  assert.ok(problems(raw).some((p) => p.startsWith('boards[1].udpPort:')));
});

const CLI = resolve(import.meta.dirname, '../../node/cli.ts');
const ews = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
const files = mkdtempSync(join(tmpdir(), 'ews-cfg-'));
after(() => rmSync(files, { recursive: true, force: true }));
let made = 0;
const file = (raw: unknown) => {
  const f = join(files, `c${made++}.json`);
  writeFileSync(f, typeof raw === 'string' ? raw : JSON.stringify(raw));
  return f;
};

test('ews check-config: exit 0 for a good config, exit 2 naming each bad key', () => {
  const ok = ews('check-config', '--config', file(valid()));
  assert.equal(ok.status, 0, ok.stderr);
  const bad = ews('check-config', '--config', file({ ...valid(), cluster: { key: 'ff' } }));
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /^cluster\.key: too short/m);
  const notJson = ews('check-config', '--config', file('{ nope'));
  assert.equal(notJson.status, 2);
  assert.match(notJson.stderr, /not valid JSON/);
  assert.equal(ews('check-config', '--config', '/nonexistent.json').status, 2);
  assert.equal(ews('frobnicate').status, 2);
});

test('ews start refuses a short key and a config without auth (exit 2)', () => {
  const shortKey = ews('start', '--config', file({ ...valid(), cluster: { key: 'ab'.repeat(8) } }), '--board', 'ews1');
  assert.equal(shortKey.status, 2);
  assert.match(shortKey.stderr, /cluster\.key: too short/);
  const raw = valid() as Record<string, unknown>;
  delete raw.auth;
  const noAuth = ews('start', '--config', file(raw), '--board', 'ews1');
  assert.equal(noAuth.status, 2);
  assert.match(noAuth.stderr, /^auth: is required/m);
  const unknownBoard = ews('start', '--config', file(valid()), '--board', 'ews9');
  assert.equal(unknownBoard.status, 2);
});

test('relations between limits are checked at load, naming the key', () => {
  const raw = valid() as Record<string, any>;
  raw.limits = { udpPacketBytesMax: 300, bodyBytesMax: 1 << 20, queueBytesMax: 1 << 19, dispatchReplayWindow: 64, inFlightPerBoardMax: 40 };
  const p = problems(raw);
  for (const want of [
    'limits.udpPacketBytesMax: must be at least 525 so an idempotency record fits one packet',
    'limits.queueBytesMax: must be at least bodyBytesMax',
    'limits.dispatchReplayWindow: must be at least 2 × inFlightPerBoardMax × boards',
  ])
    assert.ok(
      p.some((x) => x.includes(want)),
      `missing "${want}" in\n${p.join('\n')}`,
    );
});

test('class regexes run in linear time: the catastrophic pattern is harmless, a backreference is refused', () => {
  const raw = valid() as Record<string, any>;
  raw.classes = [
    { name: 'c', match: [{ regex: '^/(a+)+$' }] },
    { name: 'd', match: [{ regex: '^/(x)\\1' }] },
  ];
  assert.deepEqual(
    problems(raw).filter((p) => p.startsWith('classes')),
    ['classes[1].match[0].regex: cannot run in linear time (backreferences and lookarounds are refused)'],
  );
  raw.classes = [
    { name: 'c', match: [{ regex: '^/(a+)+$' }] },
    { name: 'd', match: [{ pathPrefix: '/' }] },
  ];
  const re = parseConfig(raw).classes[0]!.match[0]!.regex!;
  assert.ok(re.flags.includes('l'), 'compiled for the linear-time engine');
  // On the backtracking engine this input would not finish in any test's lifetime.
  assert.equal(re.test(`/${'a'.repeat(5000)}!`), false);
});

test('cluster.key: low-entropy, published and placeholder keys are refused; a generated one passes', () => {
  const withKey = (key: unknown) => problems({ ...valid(), cluster: { name: 'plant-a', key } });
  assert.match(withKey('00'.repeat(32)).join('\n'), /cluster\.key: looks low-entropy \(1 distinct/);
  assert.match(withKey('ab'.repeat(32)).join('\n'), /cluster\.key: looks low-entropy/);
  // The key the example config used to ship: 16 distinct values, and published.
  assert.match(withKey('00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff').join('\n'), /cluster\.key: is a published example key/);
  assert.match(withKey('REPLACE-ME-with-the-output-of-ews-gen-key').join('\n'), /cluster\.key: is the example's placeholder/);
  // 19 distinct byte values: one short of the bound.
  const nineteen = Buffer.from(Array.from({ length: 32 }, (_, i) => (i % 19) * 13)).toString('hex');
  assert.match(withKey(nineteen).join('\n'), /looks low-entropy \(19 distinct/);
  const twenty = Buffer.from(Array.from({ length: 32 }, (_, i) => (i % 20) * 13)).toString('hex');
  assert.deepEqual(withKey(twenty), []);
  const gen = ews('gen-key');
  assert.equal(gen.status, 0);
  assert.match(gen.stdout, /^[0-9a-f]{64}\n$/);
  assert.deepEqual(withKey(gen.stdout.trim()), []);
});

test('auth.users[].passwordHash: scrypt cost parameters out of bounds are refused, naming the user', () => {
  const salt = 'c2FsdHNhbHRzYWx0c2FsdA',
    key = 'a'.repeat(43);
  const withHash = (h: string) => problems({ ...valid(), auth: { users: [{ name: 'olga', role: 'operator', passwordHash: h }] } }).join('\n');
  assert.equal(withHash(`scrypt$16384$8$1$${salt}$${key}`), '');
  assert.match(withHash(`scrypt$1024$8$1$${salt}$${key}`), /auth\.users\[0\]\.passwordHash: scrypt N must be a power of two from 16384/);
  assert.match(withHash(`scrypt$20000$8$1$${salt}$${key}`), /N must be a power of two/);
  assert.match(withHash(`scrypt$262144$8$1$${salt}$${key}`), /N must be a power of two .* not 262144/);
  assert.match(withHash(`scrypt$16384$1$1$${salt}$${key}`), /scrypt r must be from 8/);
  assert.match(withHash(`scrypt$16384$8$9$${salt}$${key}`), /scrypt p must be from 1 to 4/);
  assert.match(withHash(`scrypt$131072$16$1$${salt}$${key}`), /needs 256 MB, more than 64 MB/);
  assert.match(withHash('md5$abc'), /is not an scrypt hash/);
});

test('schedules: cron parsed once at the edge; a bad one names its field; at most SCHEDULES_MAX', () => {
  const cfg = (schedules: unknown[]) => ({
    ...valid(),
    devices: [{ id: 'pump', driver: 'modbus-rtu', attach: [{ board: 'ews1', port: '/dev/x' }], unitId: 1, points: { speed: { holding: 1 } }, actions: {} }],
    schedules,
  });
  const c = parseConfig(cfg([{ cron: '*/5 * * * *', device: 'pump' }]));
  assert.ok(cronMatches(c.schedules[0]!.when, localTime(new Date(2026, 11, 1, 10, 5).getTime() / 1000)));
  assert.ok(!cronMatches(c.schedules[0]!.when, localTime(new Date(2026, 11, 1, 10, 6).getTime() / 1000)));
  assert.deepEqual(problems(cfg([{ cron: '0 0 31 2 mon,tuesday,x', device: 'pump' }])), ['schedules[0].cron: weekday "x": "x" is not a weekday (0-7 or a name)']);
  const many = (n: number) => Array.from({ length: n }, () => ({ cron: '@daily', device: 'pump' }));
  assert.equal(parseConfig(cfg(many(SCHEDULES_MAX))).schedules.length, SCHEDULES_MAX);
  assert.deepEqual(problems(cfg(many(SCHEDULES_MAX + 1))), [`schedules: has ${SCHEDULES_MAX + 1} entries; at most ${SCHEDULES_MAX}`]);
});

test('notify: webhooks and e-mail checked at the edge, each bad key named; exit 2 from check-config', () => {
  const notify = {
    repeatMin: 30,
    webhooks: [{ url: 'https://hooks.example/ews', secret: 's', events: ['raised'] }],
    email: { host: 'smtp.example', from: 'ews@plant.example', to: ['ops@plant.example'] },
  };
  const c = parseConfig({ ...valid(), notify });
  assert.deepEqual([c.notify?.email?.port, c.notify?.email?.starttls, c.notify?.queueMax, c.notify?.webhooks[0]?.events], [587, true, 64, ['raised']]);
  assert.equal(parseConfig(valid()).notify, undefined);
  assert.deepEqual(
    problems({
      ...valid(),
      notify: {
        repeatMin: 0.01,
        pager: true,
        webhooks: [{ url: 'ftp://x/y' }, { url: 'not a url', events: ['exploded'] }, { url: 'http://ok.example', colour: 'red' }],
        email: { host: 'smtp.example', port: 99999, from: 'nobody', to: ['ops@plant.example', 'no at sign'], user: 'u' },
      },
    }),
    [
      'notify.pager: unknown key',
      'notify.webhooks[0].url: must be an http:// or https:// URL',
      'notify.webhooks[1].url: must be an http:// or https:// URL',
      'notify.webhooks[1].events[0]: must be one of raised, cleared, repeat',
      'notify.webhooks[2].colour: unknown key',
      'notify.email.port: must be between 1 and 65535',
      'notify.email: needs both user and pass, or neither',
      'notify.email.from: must be an e-mail address',
      'notify.email.to[1]: must be an e-mail address',
      'notify.repeatMin: must be 0 (never) or at least 0.05 (3 s)',
    ],
  );
  assert.deepEqual(problems({ ...valid(), notify: {} }), ['notify: needs webhooks or email']);
  const bad = ews('check-config', '--config', file({ ...valid(), notify: { webhooks: [{ url: 'nope' }] } }));
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /^notify\.webhooks\[0\]\.url: must be an http/m);
});

test('stateDir: a directory or false; anything else is named', () => {
  assert.equal(parseConfig({ ...valid(), stateDir: false }).stateDir, false);
  assert.equal(parseConfig(valid()).stateDir, undefined);
  assert.deepEqual(problems({ ...valid(), stateDir: true }), ['stateDir: must be a directory (a non-empty string), or false for memory only']);
  assert.deepEqual(problems({ ...valid(), stateDir: '' }), ['stateDir: must be a directory (a non-empty string), or false for memory only']);
});

test('roles: viewer, operator and admin', () => {
  const users = (role: string) => ({ ...valid(), auth: { users: [{ name: 'a', role, passwordHash: `scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$${'a'.repeat(43)}` }] } });
  assert.equal(parseConfig(users('admin')).auth?.users[0]?.role, 'admin');
  assert.deepEqual(problems(users('root')), ['auth.users[0].role: must be "viewer", "operator" or "admin"']);
});

test('classes[].standingWaitMs: half the deadline for the first class by priority, off for the others unless set, 0 off, at most the class deadline; qos.standingMs within its range', () => {
  assert.deepEqual(
    parseConfig(valid()).classes.map((c) => c.standingWaitMs),
    [5000, undefined],
    'the default classes: control (deadline 10 s) waits at most 5 s in a standing queue, browse is not cut',
  );
  const two = (first: Record<string, unknown>) =>
    parseConfig({
      ...valid(),
      classes: [
        { name: 'page', priority: 5, match: [{ pathPrefix: '/' }] },
        { name: 'cmd', priority: 1, deadlineMs: 3001, match: [{ pathPrefix: '/cgi-bin/' }], ...first },
      ],
    }).classes.map((c) => c.standingWaitMs);
  assert.deepEqual(two({}), [undefined, 1501], 'the first by priority, wherever it is listed');
  assert.deepEqual(two({ standingWaitMs: 0 }), [undefined, undefined], '0 turns it off');
  const cls = (standingWaitMs: unknown) => ({ ...valid(), classes: [{ name: 'control', deadlineMs: 1000, match: [{ pathPrefix: '/' }], standingWaitMs }] });
  assert.equal(parseConfig(cls(1000)).classes[0]!.standingWaitMs, 1000);
  assert.equal(parseConfig(cls(undefined)).classes[0]!.standingWaitMs, 500);
  assert.deepEqual(problems(cls(1001)).filter((p) => p.startsWith('classes[0].standingWaitMs')).length, 1);
  assert.equal(parseConfig(valid()).qos.standingMs, 500);
  assert.ok(problems({ ...valid(), qos: { standingMs: 5 } }).some((p) => p.startsWith('qos.standingMs')));
  assert.equal(parseConfig(valid()).qos.paceFill, true, 'the fill pace is on by default');
  assert.equal(parseConfig(valid()).qos.highWaitMs, 10, "HIGH's wait budget, 10 ms by default");
  assert.equal(parseConfig({ ...valid(), qos: { highWaitMs: 0 } }).qos.highWaitMs, 0, '0: the reserve is never waived');
  assert.ok(problems({ ...valid(), qos: { highWaitMs: 60_001 } }).some((p) => p.startsWith('qos.highWaitMs')));
  assert.equal(parseConfig({ ...valid(), qos: { paceFill: false } }).qos.paceFill, false);
  assert.ok(problems({ ...valid(), qos: { paceFill: 'no' } }).includes('qos.paceFill: must be true or false'));
});

test('Modbus points and TCP devices: types, word orders, hosts, unit ids and gateway units checked by name; check-config exits 2', () => {
  const tcp = (over: Record<string, unknown>) => ({ id: 'meter', driver: 'modbus-tcp', host: '127.0.0.1', attach: [{ board: 'ews1' }], points: { kwh: { input: 0, type: 'float32' } }, ...over });
  const good = parseConfig({
    ...valid(),
    devices: [
      tcp({ gatewayUnit: 3, unitId: 0, points: { kwh: { input: 0, type: 'float32', wordOrder: 'little', byteSwap: true }, total: { holding: 10, type: 'uint32', scale: 0.1, offset: -5 } } }),
      {
        id: 'drive',
        driver: 'modbus-rtu',
        attach: [{ board: 'ews2', port: '/dev/ttyS0' }],
        gatewayUnit: 4,
        points: { hz: { holding: 0, signed: true } },
        actions: { set: { write: 'hz', from: 'value' } },
      },
    ],
  });
  const meter = good.devices[0]!;
  assert.ok(meter.driver === 'modbus-tcp');
  assert.deepEqual(meter.tcp, { host: '127.0.0.1', port: 502, framing: 'tcp' });
  assert.deepEqual(meter.attach, [{ board: 0, boardId: 'ews1', port: '' }]);
  assert.deepEqual(
    meter.points.map((p) => [p.name, p.words, p.format]),
    [
      ['kwh', 2, { type: 'float32', wordOrder: 'little', byteSwap: true, scale: 1, offset: 0 }],
      ['total', 2, { type: 'uint32', wordOrder: 'big', byteSwap: false, scale: 0.1, offset: -5 }],
    ],
  );
  const drive = good.devices[1]!;
  assert.ok(drive.driver === 'modbus-rtu');
  assert.equal(drive.points[0]!.format?.type, 'int16', 'signed: true is int16');
  assert.equal(drive.actions[0]!.input?.step, 1);
  const bad = problems({
    ...valid(),
    devices: [
      tcp({
        host: 'not a host!',
        unitId: 256,
        gatewayUnit: 5,
        framing: 'udp',
        points: { a: { input: 0, type: 'float16' }, b: { holding: 1, wordOrder: 'middle' }, c: { coil: 2, type: 'int32' }, d: { holding: 65535, type: 'int32' } },
      }),
      tcp({ id: 'm2', host: undefined, gatewayUnit: 5, attach: [{ board: 'ews1', port: '/dev/x' }] }),
    ],
  });
  for (const want of [
    /^devices\[0\]\.host: must be an IPv4 address or a host name$/,
    /^devices\[0\]\.unitId: must be an integer from 0 to 255$/,
    /^devices\[0\]\.framing: must be "tcp"/,
    /^devices\[0\]\.points\.a\.type: must be one of int16, uint16, int32, uint32, float32, float64$/,
    /^devices\[0\]\.points\.b\.wordOrder: must be "big"/,
    /^devices\[0\]\.points\.c\.type: a coil is one bit/,
    /^devices\[0\]\.points\.d\.holding: its 2 registers run past address 65535$/,
    /^devices\[1\]\.host: is required for driver modbus-tcp$/,
    /^devices\[1\]\.gatewayUnit: 5 is already device "meter"'s$/,
    /^devices\[1\]\.attach\[0\]\.port: unknown key$/,
  ])
    assert.ok(
      bad.some((p) => want.test(p)),
      `${want} in ${bad.join('\n')}`,
    );
  const cli = ews('check-config', '--config', file({ ...valid(), devices: [tcp({ points: { a: { input: 0, type: 'float16' } } })] }));
  assert.equal(cli.status, 2);
  assert.match(cli.stderr, /^devices\[0\]\.points\.a\.type: must be one of/m);
});
