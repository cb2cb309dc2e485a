// The cluster config: validated once at the edge into typed, frozen objects.
// Every problem is reported as `path: problem`; the rest of the code never sees raw JSON.

import { readCgi } from './cgi-config.ts';
import { parseClusterKey } from './cluster-key.ts';
import { configDigest } from './config-digest.ts';
import { isObj, type Raw, Reader } from './config-reader.ts';
import { frozenConfig } from './config-shapes.ts';
import { readDevices, readSchedules } from './device-config.ts';
import { readGateway } from './gateway-config.ts';
import { IDEM_RECORD_BYTES_MAX } from './idempotency-store.ts';
import { ipv4ToInt, isIPv4 } from './ipv4.ts';
import { readNotify } from './notify-config.ts';
import { readAlarms, readHistory } from './operator-config.ts';
import { HEADER_BYTES, TAG_BYTES } from './protocol.ts';
import { readClasses, readQos } from './qos-config.ts';
import { parseScryptHash } from './scrypt-hash.ts';
import { readUpgrade } from './upgrade-config.ts';

export type * from './config-types.ts';

import type { AuthConfig, BoardConfig, ClusterConfig, Config, LimitsConfig, UserConfig, VipConfig } from './config-types.ts';

export const LIMIT_DEFAULTS: LimitsConfig = {
  headerBytesMax: 8192,
  bodyBytesMax: 65536,
  answerBytesMax: 2 * 1024 * 1024,
  queueMax: 1000,
  queueBytesMax: 4 * 1024 * 1024,
  inFlightPerBoardMax: 16,
  connectionsMax: 2048,
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  keepAliveTimeoutMs: 5_000,
  dispatchAttemptsMax: 2,
  udpPacketBytesMax: 1400,
  dispatchReplayWindow: 4096,
  sseClientsMax: 32,
  sseClientsPerUserMax: 4,
  sseBytesMax: 65_536,
  loginsWaitingMax: 4,
  revokedSessionsMax: 10_000,
  serialQueueMax: 32,
  serialBackoffMaxMs: 5000,
  idempotencyKeysMax: 10_000,
  idempotencyTtlMs: 600_000,
  auditLogMax: 1000,
};

export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid config:\n${problems.join('\n')}`);
  }
}

const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
/** The least Tmax for a cluster plane on the request thread (cluster.planeThread false). */
const PLANE_INLINE_TMAX_MIN_MS = 1000;
/** The most requests one rehearsal of the master's path may send (`cluster.rehearseRequests`). */
export const REHEARSE_REQUESTS_MAX = 10_000;

function readCluster(r: Reader, raw: Raw): ClusterConfig {
  const c =
    r.obj(raw, 'cluster', '', [
      'name',
      'key',
      'acceptKeys',
      'udpPort',
      'broadcast',
      'heartbeatMs',
      'tmaxMs',
      'tthresholdMs',
      'staggerMs',
      'stateMinGapMs',
      'requestThreadDeadMs',
      'planeThread',
      'masterWork',
      'rehearseRequests',
      'rehearseEveryMs',
      'vip',
      'hosts',
    ]) ?? {};
  const p = 'cluster';
  const name = r.str(c, 'name', p, 'ews');
  let key: Buffer = Buffer.alloc(0);
  if (c.key === undefined) r.bad('cluster.key', 'is required (64 hex characters = 32 bytes; make one with: ews gen-key)');
  else {
    const k = parseClusterKey(c.key);
    if (typeof k === 'string') r.bad('cluster.key', k);
    else key = k;
  }
  const acceptKeys: Buffer[] = [];
  (r.arr(c, 'acceptKeys', p, false) ?? []).forEach((raw, i) => {
    const k = parseClusterKey(raw);
    if (typeof k === 'string') r.bad(`cluster.acceptKeys[${i}]`, k);
    else if (k.equals(key) || acceptKeys.some((x) => x.equals(k))) r.bad(`cluster.acceptKeys[${i}]`, 'repeats a key already given');
    else acceptKeys.push(k);
  });
  if (acceptKeys.length > 2) r.bad('cluster.acceptKeys', 'at most 2 (the key before and the one after)');
  const udpPort = r.int(c, 'udpPort', p, 5050, 1, 65535);
  const broadcast = r.str(c, 'broadcast', p, 'peers');
  if (broadcast !== 'peers' && !isIPv4(broadcast)) r.bad('cluster.broadcast', 'must be an IPv4 broadcast address or "peers"');
  // Defaults from bench/results/failover.md: a takeover needs Tmax / heartbeat = 6 STATEs lost in a
  // row (at 5 % loss, 0.05^6 ≈ 1.6e-8 per heartbeat); failover ≈ Tmax − U(0, heartbeat) + the claim.
  const heartbeatMs = r.int(c, 'heartbeatMs', p, 20, 10, 60_000);
  const tmaxMs = r.int(c, 'tmaxMs', p, 6 * heartbeatMs, 20, 600_000);
  const tthresholdMs = r.int(c, 'tthresholdMs', p, Math.max(500, 6 * heartbeatMs), 20, 600_000);
  const staggerMs = r.int(c, 'staggerMs', p, heartbeatMs * 2, 0, 600_000);
  const stateMinGapMs = r.int(c, 'stateMinGapMs', p, Math.max(1, Math.floor(heartbeatMs / 10)), 0, 60_000);
  const requestThreadDeadMs = r.int(c, 'requestThreadDeadMs', p, Math.max(2000, 4 * tmaxMs), 100, 600_000);
  if (requestThreadDeadMs <= tmaxMs) r.bad('cluster.requestThreadDeadMs', `must be more than tmaxMs (${tmaxMs}): a stall shorter than a takeover must not end mastership`);
  if (c.planeThread !== undefined && typeof c.planeThread !== 'boolean') r.bad('cluster.planeThread', 'must be true or false');
  const planeThread = c.planeThread !== false;
  // On the request thread the plane beats only between requests: at 20 % of a core under CPU-bound
  // load, Tmax 120 ms saw hundreds of takeovers a minute, Tmax 1 s none (bench/results/memory.md).
  if (!planeThread && tmaxMs < PLANE_INLINE_TMAX_MIN_MS)
    r.bad('cluster.planeThread', `false needs cluster.tmaxMs ≥ ${PLANE_INLINE_TMAX_MIN_MS} (it is ${tmaxMs}): the request thread's pauses under load would look like a dead master`);
  const masterWork =
    c.masterWork === undefined
      ? 'spill'
      : c.masterWork === 'spill' || c.masterWork === 'share' || c.masterWork === 'forward'
        ? c.masterWork
        : (r.bad(`${p}.masterWork`, 'must be "forward", "spill" or "share"'), 'spill');
  // A node's rehearsal of the master's path (node/http/rehearsal.ts); 0 requests: never.
  const rehearseRequests = r.int(c, 'rehearseRequests', p, 1000, 0, REHEARSE_REQUESTS_MAX);
  const rehearseEveryMs = r.int(c, 'rehearseEveryMs', p, 300_000, 10_000, 86_400_000);
  if (tmaxMs <= 2 * heartbeatMs) r.bad('cluster.tmaxMs', `must be more than 2 × heartbeatMs (${2 * heartbeatMs}) or one lost packet causes a takeover`);
  if (tthresholdMs <= 2 * heartbeatMs) r.bad('cluster.tthresholdMs', `must be more than 2 × heartbeatMs (${2 * heartbeatMs})`);
  let vip: VipConfig | undefined;
  const v = r.obj(c, 'vip', p, ['address', 'interface', 'duplicateCheck'], false);
  if (v) {
    const addr = r.str(v, 'address', 'cluster.vip');
    const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d{1,2})$/.exec(addr);
    if (!m || !isIPv4(m[1]!) || Number(m[2]) > 32) r.bad('cluster.vip.address', 'must be IPv4/prefix, e.g. 10.0.0.100/24');
    const iface = r.str(v, 'interface', 'cluster.vip');
    if (!/^[A-Za-z0-9_.-]{1,15}$/.test(iface)) r.bad('cluster.vip.interface', 'must be an interface name');
    if (v.duplicateCheck !== undefined && typeof v.duplicateCheck !== 'boolean') r.bad('cluster.vip.duplicateCheck', 'must be true or false');
    vip = { address: m?.[1] ?? '', prefix: Number(m?.[2] ?? 24), interface: iface, duplicateCheck: v.duplicateCheck === true };
  }
  const hosts: string[] = [];
  (r.arr(c, 'hosts', p, false) ?? []).forEach((h, i) => {
    if (typeof h === 'string' && /^[A-Za-z0-9.-]{1,253}$/.test(h)) hosts.push(h.toLowerCase());
    else r.bad(`${p}.hosts[${i}]`, 'must be a host name or IPv4 address');
  });
  const timings = { heartbeatMs, tmaxMs, tthresholdMs, staggerMs, stateMinGapMs, requestThreadDeadMs };
  return { name, key, acceptKeys, udpPort, broadcast, ...timings, planeThread, masterWork, rehearseRequests, rehearseEveryMs, vip, hosts };
}

function readBoards(r: Reader, raw: Raw, cluster: ClusterConfig): BoardConfig[] {
  const list = r.arr(raw, 'boards', '', true) ?? [];
  if (raw.boards !== undefined && list.length === 0) r.bad('boards', 'needs at least one board');
  if (list.length > 64) r.bad('boards', 'at most 64 boards');
  const boards: BoardConfig[] = [];
  list.forEach((b, index) => {
    const p = `boards[${index}]`;
    if (!isObj(b)) {
      r.bad(p, 'must be an object');
      return;
    }
    r.noUnknown(b, p, ['id', 'address', 'httpPort', 'udpPort', 'cgiDir']);
    const id = r.str(b, 'id', p);
    if (id && !ID_RE.test(id)) r.bad(`${p}.id`, 'must be 1-32 of A-Z a-z 0-9 _ -');
    const address = r.str(b, 'address', p);
    if (address && !isIPv4(address)) r.bad(`${p}.address`, 'must be an IPv4 address');
    const cgiDir = b.cgiDir === undefined ? undefined : r.str(b, 'cgiDir', p);
    if (cgiDir !== undefined && !cgiDir.startsWith('/')) r.bad(`${p}.cgiDir`, 'must be an absolute path');
    boards.push({ id, index, address, httpPort: r.int(b, 'httpPort', p, 80, 1, 65535), udpPort: r.int(b, 'udpPort', p, cluster.udpPort, 1, 65535), cgiDir });
  });
  const seen = new Map<string, number>();
  for (const b of boards) {
    if (seen.has(b.id)) r.bad(`boards[${b.index}].id`, `duplicate of boards[${seen.get(b.id)}]`);
    seen.set(b.id, b.index);
  }
  if (cluster.broadcast !== 'peers') {
    for (const b of boards) if (b.udpPort !== cluster.udpPort) r.bad(`boards[${b.index}].udpPort`, `must be cluster.udpPort (${cluster.udpPort}) when broadcasting`);
  }
  const endpoints = new Map<string, number>();
  for (const b of boards) {
    for (const ep of [`tcp ${b.address}:${b.httpPort}`, `udp ${b.address}:${b.udpPort}`]) {
      if (endpoints.has(ep)) r.bad(`boards[${b.index}]`, `${ep} already used by boards[${endpoints.get(ep)}]`);
      endpoints.set(ep, b.index);
    }
  }
  return boards;
}

function readLimits(r: Reader, raw: Raw): LimitsConfig {
  const l = r.obj(raw, 'limits', '', Object.keys(LIMIT_DEFAULTS), false) ?? {};
  const d = LIMIT_DEFAULTS;
  const lim = (k: keyof LimitsConfig, min: number, max: number) => r.int(l, k, 'limits', d[k], min, max);
  return {
    headerBytesMax: lim('headerBytesMax', 1024, 1 << 20),
    bodyBytesMax: lim('bodyBytesMax', 0, 64 << 20),
    answerBytesMax: lim('answerBytesMax', 1024, 64 << 20),
    queueMax: lim('queueMax', 1, 1_000_000),
    queueBytesMax: lim('queueBytesMax', 0, 1 << 30),
    inFlightPerBoardMax: lim('inFlightPerBoardMax', 1, 10_000),
    connectionsMax: lim('connectionsMax', 1, 1_000_000),
    requestTimeoutMs: lim('requestTimeoutMs', 10, 3_600_000),
    headersTimeoutMs: lim('headersTimeoutMs', 100, 600_000),
    keepAliveTimeoutMs: lim('keepAliveTimeoutMs', 100, 600_000),
    dispatchAttemptsMax: lim('dispatchAttemptsMax', 1, 10),
    udpPacketBytesMax: lim('udpPacketBytesMax', 128, 65_000),
    dispatchReplayWindow: lim('dispatchReplayWindow', 64, 1_000_000),
    sseClientsMax: lim('sseClientsMax', 0, 10_000),
    sseClientsPerUserMax: lim('sseClientsPerUserMax', 1, 10_000),
    sseBytesMax: lim('sseBytesMax', 4096, 16 << 20),
    loginsWaitingMax: lim('loginsWaitingMax', 0, 64),
    revokedSessionsMax: lim('revokedSessionsMax', 16, 100_000),
    serialQueueMax: lim('serialQueueMax', 1, 10_000),
    serialBackoffMaxMs: lim('serialBackoffMaxMs', 10, 600_000),
    idempotencyKeysMax: lim('idempotencyKeysMax', 1, 1_000_000),
    idempotencyTtlMs: lim('idempotencyTtlMs', 1000, 86_400_000),
    auditLogMax: lim('auditLogMax', 10, 100_000),
  };
}

function readAuth(r: Reader, raw: Raw): AuthConfig | undefined {
  const a = r.obj(raw, 'auth', '', ['disabled', 'users', 'sessionTtlS'], false);
  if (!a) return undefined;
  if (a.disabled !== undefined && typeof a.disabled !== 'boolean') r.bad('auth.disabled', 'must be true or false');
  const users: UserConfig[] = [];
  (r.arr(a, 'users', 'auth', false) ?? []).forEach((u, i) => {
    const p = `auth.users[${i}]`;
    if (!isObj(u)) {
      r.bad(p, 'must be an object');
      return;
    }
    r.noUnknown(u, p, ['name', 'role', 'passwordHash']);
    const role = r.str(u, 'role', p);
    if (role !== 'viewer' && role !== 'operator' && role !== 'admin') r.bad(`${p}.role`, 'must be "viewer", "operator" or "admin"');
    const passwordHash = r.str(u, 'passwordHash', p);
    const parsed = passwordHash ? parseScryptHash(passwordHash) : undefined;
    if (typeof parsed === 'string') r.bad(`${p}.passwordHash`, parsed);
    const name = r.str(u, 'name', p);
    if (users.some((x) => x.name === name)) r.bad(`${p}.name`, `duplicate user "${name}"`);
    users.push({ name, role: role === 'operator' || role === 'admin' ? role : 'viewer', passwordHash });
  });
  const disabled = a.disabled === true;
  if (!disabled && users.length === 0) r.bad('auth.users', 'needs at least one user (or set auth.disabled: true)');
  return { disabled, users, sessionTtlS: r.int(a, 'sessionTtlS', 'auth', 8 * 3600, 60, 30 * 86400) };
}

/** Validates a parsed JSON value. Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown): Config {
  const r = new Reader();
  if (!isObj(raw)) throw new ConfigError([': the config must be a JSON object']);
  r.noUnknown(raw, '', [
    'cluster',
    'boards',
    'classes',
    'qos',
    'devices',
    'schedules',
    'history',
    'alarms',
    'notify',
    'mqtt',
    'auth',
    'limits',
    'stateDir',
    'tls',
    'benchmarkHandlers',
    'cgi',
    '$schema',
    'comment',
    'configVersion',
    'upgrade',
    'gateway',
  ]);
  const cluster = readCluster(r, raw);
  const boards = readBoards(r, raw, cluster);
  const limits = readLimits(r, raw);
  const classes = readClasses(r, raw, limits);
  const auth = readAuth(r, raw);
  const devices = readDevices(
    r.arr(raw, 'devices', '', false) ?? [],
    boards.map((b) => b.id),
    r,
  );
  const schedules = readSchedules(r.arr(raw, 'schedules', '', false) ?? [], devices, r);
  const history = readHistory(r, raw);
  const upgrade = readUpgrade(r, raw);
  const gateway = readGateway(r, raw);
  if (gateway.modbusTcp && !devices.some((d) => d.driver !== 'line' && d.gatewayUnit !== undefined)) r.bad('gateway.modbusTcp', 'no device has a gatewayUnit: the gateway would reach nothing');
  const alarms = readAlarms(r, raw, devices);
  const notify = readNotify(r, raw);
  const cgi = readCgi(r, raw, devices);
  let mqtt: Config['mqtt'];
  const m = r.obj(raw, 'mqtt', '', ['url', 'prefix', 'discoveryPrefix'], false);
  if (m)
    mqtt = {
      url: r.str(m, 'url', 'mqtt'),
      prefix: r.str(m, 'prefix', 'mqtt', `ews/${cluster.name}`),
      discoveryPrefix: m.discoveryPrefix === '' ? '' : r.str(m, 'discoveryPrefix', 'mqtt', 'homeassistant'),
    };
  const sd = raw.stateDir;
  const stateDir =
    sd === undefined || sd === false || (typeof sd === 'string' && sd.length > 0) ? sd : (r.bad('stateDir', 'must be a directory (a non-empty string), or false for memory only'), undefined);
  const t = r.obj(raw, 'tls', '', ['certFile', 'keyFile', 'caFile'], false);
  const tls = t && { certFile: r.str(t, 'certFile', 'tls'), keyFile: r.str(t, 'keyFile', 'tls'), caFile: t.caFile === undefined ? undefined : r.str(t, 'caFile', 'tls') };
  const benchmarkHandlers = raw.benchmarkHandlers === undefined ? false : raw.benchmarkHandlers === true ? true : (r.bad('benchmarkHandlers', 'must be true or false'), false);
  // Relations between limits, checked once here rather than discovered at run time.
  if (limits.inFlightPerBoardMax * Math.max(1, boards.length) > limits.connectionsMax) r.bad('limits.connectionsMax', 'must be at least inFlightPerBoardMax × boards');
  const idemPacket = IDEM_RECORD_BYTES_MAX + HEADER_BYTES + TAG_BYTES;
  if (limits.udpPacketBytesMax < idemPacket) r.bad('limits.udpPacketBytesMax', `must be at least ${idemPacket} so an idempotency record fits one packet`);
  if (limits.queueBytesMax < limits.bodyBytesMax) r.bad('limits.queueBytesMax', 'must be at least bodyBytesMax (a request of the largest body must be able to wait)');
  const inFlight = limits.inFlightPerBoardMax * Math.max(1, boards.length);
  if (limits.dispatchReplayWindow < 2 * inFlight)
    r.bad('limits.dispatchReplayWindow', `must be at least 2 × inFlightPerBoardMax × boards (${2 * inFlight}): a dispatch still in flight must stay inside the window`);
  const qos = readQos(r, raw, classes);
  const configVersion = r.int(raw, 'configVersion', '', 0, 0, Number.MAX_SAFE_INTEGER);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  const digest = configDigest(raw);
  return frozenConfig({
    cluster,
    boards,
    classes,
    qos,
    limits,
    auth,
    devices,
    schedules,
    history,
    alarms,
    notify,
    cgi,
    mqtt,
    stateDir,
    tls,
    benchmarkHandlers,
    upgrade,
    gateway,
    configVersion,
    digest,
  });
}

/** Problems that make `ews start` refuse to boot, beyond validity. */
export function startProblems(cfg: Config): string[] {
  const out: string[] = [];
  if (cfg.auth === undefined) out.push('auth: is required to start a board; set "auth": {"disabled": true} to run without login explicitly');
  return out;
}

export { ipv4ToInt };
