// Deployment: the installed package boots on its own (no TypeScript, no tsx, no checkout), the
// systemd unit is valid and minimal, and the watchdog protocol is spoken.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { demoDevices } from '../../dev/demo.ts';
import { PumpSimulator } from '../../dev/simulators/pump.ts';
import { BOARD_NODE_FLAGS } from '../../shared/node-flags.ts';
import { ptyPair, ptyWire } from '../devices/pty.ts';
import { freePorts, ROOT, waitFor } from './harness.ts';

describe('deploy', () => {
  let root: string;
  let example: string;
  let install: ReturnType<typeof spawnSync>;
  const procs: ChildProcess[] = [];
  /** A root file system as an image has it: users and groups, and the tools a VIP needs. */
  const images: string[] = [];
  const image = () => {
    const dir = mkdtempSync(join(tmpdir(), 'ews-root-'));
    images.push(dir);
    mkdirSync(join(dir, 'etc'));
    mkdirSync(join(dir, 'usr/sbin'), { recursive: true });
    writeFileSync(join(dir, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nsystemd-network:x:100:102::/:/usr/sbin/nologin\n');
    writeFileSync(join(dir, 'etc/group'), 'root:x:0:\ndialout:x:20:pi\nsystemd-network:x:102:\n');
    writeFileSync(join(dir, 'etc/shadow'), 'root:*:19000:0:99999:7:::\n');
    for (const tool of ['ip', 'arping']) writeFileSync(join(dir, 'usr/sbin', tool), '#!/bin/sh\n', { mode: 0o755 });
    return dir;
  };
  before(() => {
    root = image();
    // The example as shipped has a placeholder key: install refuses it, naming the key.
    const asShipped = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', join(ROOT, 'deploy/example-cluster.json'), '--board', 'ews2', '--root', image(), '--node', process.execPath], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(asShipped.status, 2);
    assert.match(asShipped.stderr, /cluster\.key: is the example's placeholder/);
    example = join(mkdtempSync(join(tmpdir(), 'ews-example-')), 'cluster.json');
    writeFileSync(example, readFileSync(join(ROOT, 'deploy/example-cluster.json'), 'utf8').replace('REPLACE-ME-with-the-output-of-ews-gen-key', randomBytes(32).toString('hex')));
    const r = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews2', '--root', root, '--node', process.execPath], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    install = r;
  });
  after(() => {
    for (const p of procs) p.kill('SIGKILL');
    if (example) rmSync(dirname(example), { recursive: true, force: true });
    for (const d of images) rmSync(d, { recursive: true, force: true });
  });

  test('install lays out the bundle, content trees, runtime packages, config, board id and unit', () => {
    for (const f of [
      'opt/ews/current/ews.js',
      'opt/ews/current/release.json',
      'opt/ews/current/site/3/index.html',
      'opt/ews/current/site/1/app.js',
      'opt/ews/current/node_modules/serialport/package.json',
      'opt/ews/current/node_modules/@serialport/bindings-cpp/prebuilds/linux-arm',
      'opt/ews/current/node_modules/@serialport/bindings-cpp/prebuilds/linux-arm64',
      'etc/ews/cluster.json',
      'etc/systemd/system/ews.service',
    ]) {
      assert.ok(existsSync(join(root, f)), f);
    }
    assert.equal(readlinkSync(join(root, 'opt/ews/current')), 'releases/0.1.0', 'the unit runs a release through the current link');
    assert.equal(existsSync(join(root, 'opt/ews/current/node_modules/typescript')), false, 'no dev tools on a board');
    assert.equal(existsSync(join(root, 'opt/ews/current/node_modules/tsx')), false);
    assert.equal(existsSync(join(root, 'opt/ews/current/node_modules/@types')), false, 'no type declarations');
    // What is left still loads: the MQTT client (lazily imported by a board with mqtt.url) and serialport.
    const load = spawnSync(process.execPath, ['-e', "Promise.all([import('mqtt'), import('serialport')]).then(([m, s]) => console.log(typeof m.connect, typeof s.SerialPort))"], {
      cwd: join(root, 'opt/ews/current'),
      encoding: 'utf8',
    });
    assert.equal(load.stdout.trim(), 'function function', load.stderr);
    const size = Number(spawnSync('du', ['-sm', join(root, 'opt/ews')], { encoding: 'utf8' }).stdout.split('\t')[0]);
    assert.ok(size <= 14, `the package is ${size} MB`);
    assert.equal(readFileSync(join(root, 'etc/ews/board.env'), 'utf8'), 'EWS_BOARD=ews2\n');
    const bad = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews9', '--root', image()], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /"ews9" is not in/);
  });

  test('the image gets an ews user (in dialout) and group, the config root:ews 0640, and ews on PATH', () => {
    const passwd = readFileSync(join(root, 'etc/passwd'), 'utf8'),
      group = readFileSync(join(root, 'etc/group'), 'utf8');
    const user = /^ews:x:(\d+):(\d+):[^:]*:\/nonexistent:\/usr\/sbin\/nologin$/m.exec(passwd);
    assert.ok(user, passwd);
    assert.deepEqual([user[1], user[2]], ['101', '101'], 'the first system id free in both files');
    assert.match(group, /^ews:x:101:$/m);
    assert.match(group, /^dialout:x:20:pi,ews$/m);
    assert.match(readFileSync(join(root, 'etc/shadow'), 'utf8'), /^ews:!:/m);
    const st = statSync(join(root, 'etc/ews/cluster.json'));
    assert.equal(st.mode & 0o777, 0o640);
    if (process.getuid?.() === 0) assert.deepEqual([st.uid, st.gid], [0, 101]);
    else assert.match(String(install.stderr), /could not give .* to group ews/);
    // /usr/local/bin/ews runs the installed bundle (at /opt/ews on the board) with the chosen Node.
    assert.equal(readFileSync(join(root, 'usr/local/bin/ews'), 'utf8'), `#!/bin/sh\nexec ${process.execPath} /opt/ews/current/ews.js "$@"\n`);
    assert.equal(statSync(join(root, 'usr/local/bin/ews')).mode & 0o755, 0o755);
    const ews = spawnSync(process.execPath, [join(root, 'opt/ews/current/ews.js'), '--help'], { encoding: 'utf8' });
    assert.equal(ews.status, 0);
    assert.match(ews.stdout, /usage:/);
    // Installing again changes nothing in the user database.
    const again = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews2', '--root', root, '--node', process.execPath], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(again.status, 0, again.stderr);
    assert.equal(readFileSync(join(root, 'etc/passwd'), 'utf8'), passwd);
    assert.equal(readFileSync(join(root, 'etc/group'), 'utf8'), group);
  });

  test("an image for another CPU: the host's node runs the checks, the image's node is the one the unit and the command name", () => {
    const arm = image();
    try {
      const r = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews2', '--root', arm, '--node', '/usr/local/bin/node'], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /note: \/usr\/local\/bin\/node is not in the image/);
      assert.ok(readFileSync(join(arm, 'etc/systemd/system/ews.service'), 'utf8').includes(`ExecStart=/usr/local/bin/node ${BOARD_NODE_FLAGS.join(' ')} /opt/ews/current/ews.js start`));
      assert.equal(readFileSync(join(arm, 'usr/local/bin/ews'), 'utf8'), '#!/bin/sh\nexec /usr/local/bin/node /opt/ews/current/ews.js "$@"\n');
      const relative = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews2', '--root', arm, '--node', 'node'], { encoding: 'utf8', timeout: 120_000 });
      assert.equal(relative.status, 2);
      assert.match(relative.stderr, /--node must be an absolute path/);
    } finally {
      rmSync(arm, { recursive: true, force: true });
    }
  });

  test('with a VIP, install refuses an image without ip or arping, naming the package', () => {
    const bare = image();
    rmSync(join(bare, 'usr/sbin/arping'));
    const r = spawnSync('bash', [join(ROOT, 'deploy/install.sh'), '--config', example, '--board', 'ews2', '--root', bare, '--node', process.execPath], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /arping not found under .*iputils-arping/);
  });

  test('the unit: restart on failure, watchdog, a dedicated user with dialout, only the capabilities it needs, the board memory flags', () => {
    const unit = readFileSync(join(root, 'etc/systemd/system/ews.service'), 'utf8');
    for (const line of [
      'Restart=on-failure',
      'Type=notify',
      'WatchdogSec=20s',
      'User=ews',
      'SupplementaryGroups=dialout',
      'NoNewPrivileges=yes',
      'AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW CAP_NET_BIND_SERVICE',
      'CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_NET_BIND_SERVICE',
    ]) {
      assert.ok(unit.includes(`\n${line}\n`), line);
    }
    assert.ok(unit.includes(`\nExecStart=${process.execPath} ${BOARD_NODE_FLAGS.join(' ')} /opt/ews/current/ews.js start`), 'the same V8 flags as shared/node-flags.ts');
    const v = spawnSync('systemd-analyze', ['verify', join(root, 'etc/systemd/system/ews.service')], { encoding: 'utf8' });
    if (v.error) return; // systemd-analyze not on this machine
    assert.doesNotMatch(`${v.stdout}${v.stderr}`, /ews\.service:\d+/, 'systemd-analyze finds nothing wrong in the unit');
  });

  test('the installed package boots without the checkout, drives a device, serves the UI, and speaks the systemd watchdog', async (t) => {
    const [http, udp] = await freePorts(2);
    const dir = mkdtempSync(join(tmpdir(), 'ews-run-'));
    images.push(dir);
    const cfgFile = join(dir, 'c.json');
    // The demo's pump on a real pseudo-terminal: the installed board drives it through the
    // package's own serialport (its native binding), a simulator answers on the other end.
    const pty = await ptyPair();
    const wire = await ptyWire(pty.b);
    new PumpSimulator(1).attach(wire.wire);
    t.after(async () => {
      await wire.close();
      await pty.kill();
    });
    const pump = { ...(demoDevices(['b1']) as Array<Record<string, unknown>>)[0], attach: [{ board: 'b1', port: pty.a }] };
    writeFileSync(
      cfgFile,
      JSON.stringify({
        cluster: { key: 'dc354be0d1f0cc7e814f4e268473b31b20835b361cc91186d1cd6c69a059acf4' },
        boards: [{ id: 'b1', address: '127.0.0.1', httpPort: http, udpPort: udp }],
        devices: [pump],
        auth: { disabled: true },
      }),
    );
    // A stand-in for systemd's notify socket (a unix datagram socket), to hear READY and WATCHDOG.
    const sockPath = join(dir, 'notify.sock');
    const listener = spawn(
      '/usr/bin/python3',
      [
        '-u',
        '-c',
        `import socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\ns.bind(sys.argv[1])\nprint('listening',flush=True)\nwhile True: print(s.recv(4096).decode().replace('\\n',' '),flush=True)`,
        sockPath,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    procs.push(listener);
    let heard = '';
    listener.stdout!.on('data', (d) => (heard += d.toString()));
    await waitFor('notify listener', async () => heard.includes('listening'));
    const board = spawn(process.execPath, [...BOARD_NODE_FLAGS, join(root, 'opt/ews/current/ews.js'), 'start', '--config', cfgFile, '--board', 'b1'], {
      cwd: dir,
      stdio: 'ignore',
      // As systemd's StateDirectory=ews gives it (the config names no stateDir).
      env: { PATH: process.env.PATH, NOTIFY_SOCKET: sockPath, WATCHDOG_USEC: '900000', EWS_LOG_LEVEL: 'warn', STATE_DIRECTORY: join(dir, 'state') },
    });
    procs.push(board);
    const u = `http://127.0.0.1:${http}`;
    await waitFor('installed board serving', async () => (await fetch(`${u}/healthz`)).ok, 20_000);
    const dev = await waitFor('device through the installed serialport', async () => {
      const r = await fetch(`${u}/cgi-bin/devices/pump1`);
      return r.ok ? ((await r.json()) as { result: Record<string, unknown> }) : undefined;
    });
    assert.equal(dev.result.speed, 1200);
    const page = await fetch(`${u}/`);
    assert.equal(page.headers.get('x-ews-level'), '3');
    assert.match(await page.text(), /<title>ews<\/title>/);
    await waitFor('READY and two watchdog pings', async () => heard.includes('READY=1') && heard.split('WATCHDOG=1').length > 2, 10_000);
    assert.ok(existsSync(join(dir, 'state', 'b1.epoch')), 'durable without a stateDir in the config: $STATE_DIRECTORY holds the state');
  });
});
