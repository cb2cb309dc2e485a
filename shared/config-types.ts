// The cluster config's types: what the validated, frozen config holds. Read and checked once at
// the edge (config.ts); the rest of the code sees only these.

import type { CgiConfig } from './cgi-config.ts';
import type { DeviceConfig, ScheduleConfig } from './device-config.ts';
import type { GatewayConfig } from './gateway-config.ts';
import type { NotifyConfig } from './notify-config.ts';
import type { AlarmConfig, HistoryConfig } from './operator-config.ts';
import type { UpgradeConfig } from './upgrade-config.ts';

/** `duplicateCheck`: arping -D before claiming (costs 1 s: arping's shortest wait); off by default, the term fences the address instead. */
export interface VipConfig {
  readonly address: string;
  readonly prefix: number;
  readonly interface: string;
  readonly duplicateCheck: boolean;
}
export interface ClusterConfig {
  readonly name: string;
  readonly key: Buffer;
  /** Keys accepted besides `key`, never sent with: a key change made one board at a time. */
  readonly acceptKeys: readonly Buffer[];
  readonly udpPort: number;
  /** An IPv4 broadcast address, or 'peers' for unicast fan-out to every board. */
  readonly broadcast: string;
  readonly heartbeatMs: number;
  readonly tmaxMs: number;
  readonly tthresholdMs: number;
  /** Extra wait per step of ring distance before a non-adjacent board takes over. */
  readonly staggerMs: number;
  /** Least gap between two change-triggered STATE broadcasts (coalescing). */
  readonly stateMinGapMs: number;
  /** The request thread silent this long, a master steps down on purpose (the cluster plane keeps beating meanwhile). */
  readonly requestThreadDeadMs: number;
  /**
   * The cluster plane on a thread of its own (true, the default): heartbeats go on while the
   * request thread is busy or stalled. false: the plane runs on the request thread, without a
   * second V8 isolate (about 10 MB less RSS, bench/results/memory.md), and a request thread
   * stalled beyond tmaxMs lets another board take over; give such a board a larger tmaxMs.
   */
  readonly planeThread: boolean;
  /**
   * Where the master's own share of the work goes. 'spill' (the default, measured best in
   * bench/results/dispatch-path.md): the master runs a request itself only when every other
   * eligible board is full (it pays for every request it forwards, so forwarding comes first; its
   * own starts are paced). 'share': the paper's rule, the master is a board like the others.
   * 'forward': the master runs only what no other running board can serve.
   */
  readonly masterWork: 'spill' | 'share' | 'forward';
  /**
   * A node sends this many requests through a private copy of the master's request path, soon
   * after it starts and then every `rehearseEveryMs` while it is a node, so that the code a
   * takeover needs is compiled before it is needed (node/http/rehearsal.ts). 0: never.
   */
  readonly rehearseRequests: number;
  readonly rehearseEveryMs: number;
  readonly vip: VipConfig | undefined;
  /**
   * Names clients may reach the cluster by, besides the boards' and the VIP's addresses and
   * localhost: a request with any other Host is refused (DNS rebinding).
   */
  readonly hosts: readonly string[];
}
export interface BoardConfig {
  readonly id: string;
  readonly index: number;
  readonly address: string;
  readonly httpPort: number;
  readonly udpPort: number;
  /** Where this board's CGI programs are, if not `cgi.dir`. */
  readonly cgiDir: string | undefined;
}
export interface MatchRule {
  readonly pathPrefix?: string;
  readonly method?: string;
  readonly regex?: RegExp;
  /** A request header present (`name`) or equal to a value (`name=value`). */
  readonly header?: { name: string; value: string | undefined };
  /** A cookie present. */
  readonly cookie?: string;
  /** The client's IPv4 address inside a network, e.g. 10.0.0.0/8. */
  readonly client?: { net: number; mask: number };
}
export interface ClassConfig {
  readonly name: string;
  readonly priority: number;
  readonly match: readonly MatchRule[];
  /** QoS: DWFS initial weight, FPD/weakly-hard share, (m,k) constraint, response-time target. */
  readonly weight: number;
  readonly share: number;
  /** 002: the least quality (0..1, of the last historyK answers) before the class is critical: served first among normal-mode classes, never degraded. 0: never critical. */
  readonly setQoS: number;
  readonly mk: { m: number; k: number } | undefined;
  readonly targetMs: number;
  /** Per-class queue bound (defaults to limits.queueMax). */
  readonly queueMax: number;
  /** A request still queued after this long is answered 503 instead of being served late. */
  readonly deadlineMs: number;
  /** While the class's queue stands (not once empty for qos.standingMs), a request that waited longer than this is refused (503 OVERLOADED); undefined: never (the default but for the first class, which waits at most half its deadline). */
  readonly standingWaitMs: number | undefined;
}
export type SchedulerName = 'priority' | 'fifo' | 'dwfs' | 'weakly-hard' | 'fpd';
export interface AdmissionConfig {
  readonly targetQueue: number;
  readonly q0: number;
  readonly q1: number;
  readonly alpha: number;
  readonly refuseAfterPeriods: number;
  readonly reserveMax: number;
  /** Budget growth per period while the queue ends empty and requests wait in the reserve (1: the paper's law alone). */
  readonly probeGrowth: number;
}
export interface AdaptationConfig {
  readonly levels: number;
  readonly targetUtilization: number;
  readonly k: number;
  readonly a: number;
  readonly b: number;
}
export interface QuotaConfig {
  readonly gain: number;
}
export interface QosConfig {
  readonly scheduler: SchedulerName;
  /** Control period of every QoS loop. */
  readonly periodMs: number;
  /** Responses remembered per class (responseLevelLog length). */
  readonly historyK: number;
  readonly dwfsBeta: number;
  readonly admission: AdmissionConfig | undefined;
  readonly adaptation: AdaptationConfig | undefined;
  readonly quota: QuotaConfig | undefined;
  /** The share of the cluster's slots the other classes leave free while the first class is active (a trunk reservation). */
  readonly highReserve: number;
  /** HIGH's wait budget: the reserve is waived for another class when a job in service is due to answer within this, while the first class's recent longest wait for a slot is under it (0: never). */
  readonly highWaitMs: number;
  /** Others start no faster than the slots empty while HIGH is active (docs/qos.md). */
  readonly paceFill: boolean;
  /** How long a class's queue must stay non-empty to count as standing (classes[].standingWaitMs). */
  readonly standingMs: number;
}
export interface LimitsConfig {
  readonly headerBytesMax: number;
  readonly bodyBytesMax: number;
  /** The largest answer a board sends the master over the dispatch link. */
  readonly answerBytesMax: number;
  readonly queueMax: number;
  readonly queueBytesMax: number;
  readonly inFlightPerBoardMax: number;
  readonly connectionsMax: number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly dispatchAttemptsMax: number;
  readonly udpPacketBytesMax: number;
  readonly dispatchReplayWindow: number;
  readonly sseClientsMax: number;
  /** `/api/events` listeners one user may hold on a board. */
  readonly sseClientsPerUserMax: number;
  /** Bytes an event stream may fall behind its client; past it the stream is closed (the UI reconnects). */
  readonly sseBytesMax: number;
  /** Logins waiting for their password check (one runs at a time); more are refused with 503. */
  readonly loginsWaitingMax: number;
  /** Logged-out sessions remembered (on disk in stateDir) until they expire. */
  readonly revokedSessionsMax: number;
  /** Requests waiting per serial port. */
  readonly serialQueueMax: number;
  /** Longest wait between attempts to reopen a lost serial port. */
  readonly serialBackoffMaxMs: number;
  /** Idempotency-Key records kept (shared through the cluster) and for how long. */
  readonly idempotencyKeysMax: number;
  readonly idempotencyTtlMs: number;
  /** Entries of the cluster's audit log every board keeps (commands, logins, failovers, devices, alarms). */
  readonly auditLogMax: number;
}
/**
 * HTTPS on every board's httpPort (PEM files). `caFile`: what boards verify each other against;
 * without it the certificate is its own CA (one self-signed cluster certificate, `ews gen-cert`).
 */
export interface TlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string | undefined;
}
export interface UserConfig {
  readonly name: string;
  /** viewer: reads; operator: also controls devices; admin: also runs the cluster (restore, config, drain, handover, upgrade). */
  readonly role: 'viewer' | 'operator' | 'admin';
  readonly passwordHash: string;
}
export interface AuthConfig {
  readonly disabled: boolean;
  readonly users: readonly UserConfig[];
  readonly sessionTtlS: number;
}
export interface Config {
  readonly cluster: ClusterConfig;
  readonly boards: readonly BoardConfig[];
  readonly classes: readonly ClassConfig[];
  readonly qos: QosConfig;
  readonly limits: LimitsConfig;
  /** undefined = no auth section at all (check-config accepts it, `ews start` refuses it). */
  readonly auth: AuthConfig | undefined;
  readonly devices: readonly DeviceConfig[];
  readonly schedules: readonly ScheduleConfig[];
  readonly history: HistoryConfig;
  readonly alarms: readonly AlarmConfig[];
  /** Who is told of alarms (webhooks, e-mail) and how often while unacknowledged; none: nobody. */
  readonly notify: NotifyConfig | undefined;
  /** CGI programs from the boards' cgi directories. */
  readonly cgi: CgiConfig;
  /** `discoveryPrefix`: Home Assistant discovery topics go under it ('' turns discovery off). */
  readonly mqtt: { readonly url: string; readonly prefix: string; readonly discoveryPrefix: string } | undefined;
  /**
   * Where a board keeps what must survive a restart (boot epoch, intents, logouts, history, the
   * audit log, alarm episodes). undefined: resolved at start ($STATE_DIRECTORY, else /var/lib/ews);
   * false: memory only, said explicitly.
   */
  readonly stateDir: string | false | undefined;
  readonly tls: TlsConfig | undefined;
  /** Benchmark-only handlers (`/cgi-bin/burn?ms=N` burns N ms of CPU); off unless asked for. */
  readonly benchmarkHandlers: boolean;
  /** How the boards take a new release (signed bundles, node/upgrade/). */
  readonly upgrade: UpgradeConfig;
  /** The cluster's Modbus TCP gateway, served by the master. */
  readonly gateway: GatewayConfig;
  /** The config's version: a number that only grows as the cluster's config changes (0 unless given). */
  readonly configVersion: number;
  /** The content hash of the file (shared/config-digest.ts): boards with the same config report the same. */
  readonly digest: string;
}
