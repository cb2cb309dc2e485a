// CGI/1.1 as pure functions (RFC 3875): the program a target names, the environment it gets, the
// answer read from its output. The runner that spawns programs is tested with real ones.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CgiRequest, cgiEnvironment, parseCgiOutput, programNameProblem, programTarget } from '../../shared/cgi.ts';
import { parseConfig } from '../../shared/config.ts';
import { classAtRank } from '../../shared/qos-config.ts';
import { parseUserLine, userLine } from '../../shared/user-line.ts';

test('a target names a program, its PATH_INFO and its query; built-in names are not programs', () => {
  assert.deepEqual(programTarget('/cgi-bin/pump.sh'), { name: 'pump.sh', pathInfo: '', query: '' });
  assert.deepEqual(programTarget('/cgi-bin/pump.sh/a/b?x=1&y=2'), { name: 'pump.sh', pathInfo: '/a/b', query: 'x=1&y=2' });
  assert.deepEqual(programTarget('/cgi-bin/run/?'), { name: 'run', pathInfo: '/', query: '' });
  assert.equal(programTarget('/cgi-bin/devices/pump1'), undefined);
  assert.equal(programTarget('/cgi-bin/echo?ms=1'), undefined);
  assert.equal(programTarget('/cgi-bin/.hidden'), undefined);
  assert.equal(programTarget('/cgi-bin/'), undefined);
  assert.equal(programTarget('/api/x'), undefined);
  assert.match(programNameProblem('devices')!, /built-in/);
  assert.match(programNameProblem('../x')!, /1-64/);
  assert.equal(programNameProblem('read-meter.py'), undefined);
});

const req = (over: Partial<CgiRequest> = {}): CgiRequest => ({
  method: 'POST',
  target: { name: 'valve.sh', pathInfo: '/open', query: 'fast=1' },
  headers: [
    ['Host', 'ews1:8081'],
    ['User-Agent', 'curl/8'],
    ['Accept', 'text/plain'],
    ['Accept', 'application/json'],
    ['Authorization', 'Bearer secret'],
    ['Cookie', 'ews_session=secret'],
    ['Proxy-Authorization', 'x'],
    ['X-EWS-Origin', 'schedule'],
    ['X-Forwarded-For', '10.0.0.9'],
    ['Idempotency-Key', 'k1'],
    ['Content-Type', 'application/json'],
    ['Content-Length', '9'],
    ['LD_PRELOAD', '/tmp/evil.so'],
    ['X-Odd', 'a\nb\0c'],
  ],
  bodyBytes: 9,
  contentType: 'application/json',
  clientAddress: '192.168.1.7',
  serverName: 'ews1',
  serverPort: 8081,
  https: false,
  user: { name: 'olga', role: 'operator', via: 'bearer' },
  board: 'ews2',
  idempotencyKey: 'olga|k1',
  devicePort: '/dev/ttyUSB0',
  serverSoftware: 'ews/0.1.0',
  ...over,
});

test('the environment: every meta-variable, ews own, PATH, and nothing a request could name', () => {
  const env = cgiEnvironment(req());
  assert.equal(env.LD_PRELOAD, undefined, 'a header cannot set a variable outside the list');
  for (const v of Object.values(env)) assert.doesNotMatch(v, /secret/);
  assert.deepEqual(env, {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    SERVER_SOFTWARE: 'ews/0.1.0',
    SERVER_NAME: 'ews1',
    SERVER_PORT: '8081',
    REQUEST_METHOD: 'POST',
    SCRIPT_NAME: '/cgi-bin/valve.sh',
    QUERY_STRING: 'fast=1',
    REMOTE_ADDR: '192.168.1.7',
    EWS_BOARD: 'ews2',
    PATH_INFO: '/open',
    CONTENT_LENGTH: '9',
    CONTENT_TYPE: 'application/json',
    REMOTE_USER: 'olga',
    AUTH_TYPE: 'Bearer',
    EWS_USER_ROLE: 'operator',
    EWS_IDEMPOTENCY_KEY: 'olga|k1',
    EWS_DEVICE_PORT: '/dev/ttyUSB0',
    HTTP_HOST: 'ews1:8081',
    HTTP_USER_AGENT: 'curl/8',
    HTTP_ACCEPT: 'text/plain, application/json',
    HTTP_X_ODD: 'a b c',
  });
  const anonymous = cgiEnvironment(
    req({ method: 'GET', bodyBytes: 0, contentType: undefined, user: undefined, idempotencyKey: undefined, devicePort: undefined, https: true, target: { name: 'r', pathInfo: '', query: '' } }),
  );
  for (const k of ['REMOTE_USER', 'AUTH_TYPE', 'EWS_USER_ROLE', 'CONTENT_LENGTH', 'CONTENT_TYPE', 'PATH_INFO', 'EWS_IDEMPOTENCY_KEY', 'EWS_DEVICE_PORT']) assert.equal(anonymous[k], undefined, k);
  assert.equal(anonymous.HTTPS, 'on');
});

const out = (s: string) => Buffer.from(s, 'latin1');

test("a program's output: headers, Status, Content-Type, the body; LF or CRLF", () => {
  assert.deepEqual(parseCgiOutput(out('Content-Type: text/plain\n\nhello')), { kind: 'document', status: 200, reason: 'OK', headers: [['Content-Type', 'text/plain']], body: out('hello') });
  const s = parseCgiOutput(out('Status: 418 Short and stout\r\nContent-Type: application/json\r\nX-Meter: 7\r\nContent-Length: 99\r\n\r\n{}'));
  assert.deepEqual(s, {
    kind: 'document',
    status: 418,
    reason: 'Short and stout',
    headers: [
      ['Content-Type', 'application/json'],
      ['X-Meter', '7'],
    ],
    body: out('{}'),
  });
});

test('Location: a local path is a redirect inside the cluster, an absolute URL a 302', () => {
  assert.deepEqual(parseCgiOutput(out('Location: /cgi-bin/other?x=1\n\n')), { kind: 'local-redirect', location: '/cgi-bin/other?x=1' });
  assert.deepEqual(parseCgiOutput(out('Location: https://example.org/a\n\n')), { kind: 'document', status: 302, reason: 'Found', headers: [['Location', 'https://example.org/a']], body: out('') });
  assert.equal(parseCgiOutput(out('Location: //evil.example/\n\n')).kind, 'bad');
  assert.equal(parseCgiOutput(out('Location: javascript:alert(1)\n\n')).kind, 'bad');
});

test('no valid header block is refused, with what was wrong', () => {
  assert.match((parseCgiOutput(out('hello world')) as { problem: string }).problem, /no header block/);
  assert.match((parseCgiOutput(out('hello world\n\n')) as { problem: string }).problem, /not a header line/);
  assert.match((parseCgiOutput(out('X-Only: 1\n\nbody')) as { problem: string }).problem, /no Content-Type/);
  assert.match((parseCgiOutput(out('Status: 99 no\nContent-Type: text/plain\n\n')) as { problem: string }).problem, /Status/);
  assert.match((parseCgiOutput(out(`X-Big: ${'a'.repeat(20_000)}\n\n`)) as { problem: string }).problem, /first 16384 bytes/);
});

test('the cgi section: a wrong type, a reserved name, a port no device has are refused by name', () => {
  const base = {
    cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
    boards: [{ id: 'b1', address: '127.0.0.1', cgiDir: '/opt/site/cgi' }],
    auth: { disabled: true },
    devices: [{ id: 'v', driver: 'line', attach: [{ board: 'b1', port: '/dev/ttyS1' }], points: { p: { query: 'P?', parse: '(\\d+)' } } }],
  };
  const cfg = parseConfig({ ...base, cgi: { programs: { 'valve.sh': { port: '/dev/ttyS1', timeoutMs: 2000 } } } });
  assert.deepEqual(cfg.cgi, { dir: '/etc/ews/cgi-bin', programs: { 'valve.sh': { class: 'control', timeoutMs: 2000, concurrencyMax: 2, port: '/dev/ttyS1' } } });
  assert.equal(cfg.boards[0]!.cgiDir, '/opt/site/cgi');
  const problems = (cgi: unknown) => {
    try {
      parseConfig({ ...base, cgi });
      return [];
    } catch (e) {
      return (e as Error).message.split('\n').slice(1);
    }
  };
  assert.deepEqual(problems({ programs: { devices: {} } }), ['cgi.programs.devices: is the name of a built-in handler (devices, echo, burn are reserved)']);
  assert.deepEqual(problems({ programs: { x: { port: '/dev/ttyUSB9' } } }), ['cgi.programs.x.port: "/dev/ttyUSB9" is no device\'s port (devices[].attach[].port)']);
  assert.deepEqual(problems({ programs: { x: { timeoutMs: '5s', class: 'urgent' } } }), [
    'cgi.programs.x.class: must be "control" (HIGH) or "page" (LOW)',
    'cgi.programs.x.timeoutMs: must be an integer',
  ]);
  assert.deepEqual(problems({ dir: 'cgi-bin' }), ['cgi.dir: must be an absolute path']);
  assert.deepEqual(problems({ programs: [] }), ['cgi.programs: must be an object: { "NAME": { "class", "timeoutMs", "concurrencyMax", "port" } }']);
});

test("a program's class: control is the first class by priority, page the last", () => {
  const classes = [
    { name: 'low', priority: 5 },
    { name: 'high', priority: 0 },
    { name: 'mid', priority: 2 },
  ] as unknown as Parameters<typeof classAtRank>[0];
  assert.equal(classAtRank(classes, 'first'), 1);
  assert.equal(classAtRank(classes, 'last'), 0);
});

test('the user line a dispatch frame carries: made and read back, anything else refused', () => {
  const line = userLine({ name: 'ada', role: 'operator', via: 'bearer' });
  assert.equal(line, 'ada operator bearer');
  assert.deepEqual(parseUserLine(line), { name: 'ada', role: 'operator', via: 'bearer' });
  for (const bad of [undefined, '', 'ada root bearer', 'ada operator open', 'ada operator bearer extra']) assert.equal(parseUserLine(bad), undefined, String(bad));
});
