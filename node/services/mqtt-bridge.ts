// MQTT bridge, optional (`mqtt.url`). Every board: retained online/offline status with a
// last will. The master: retained cluster and device state, commands on .../set through its own
// HTTP port (the same dispatch as HTTP control), results on .../result. The broker is never on
// the HTTP path: nothing waits for it, and nothing is queued for it while it is away (state is
// published again on reconnect).
import type { MqttClient } from 'mqtt';
import type { BoardConfig, Config } from '../../shared/config.ts';
import { EwsError } from '../../shared/errors.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import type { Logger } from '../log.ts';
import { discoveryMessages } from './ha-discovery.ts';
import type { Loopback } from './loopback.ts';

export interface BridgeSources {
  cluster(): unknown;
  devices(): Array<{ id: string }>;
  alarms(): unknown;
}

const SET_RE = /^devices\/([^/]+)\/([^/]+)\/set$/;
const PAYLOAD_BYTES_MAX = 4096;
const REFRESH_MS = 5000;

export class MqttBridge {
  private client: MqttClient | undefined;
  private master = false;
  private lastCluster = '';
  private lastAlarms = '';
  private readonly lastDevice = new Map<string, string>();
  private readonly commands: Counter;
  private inflight = 0;
  private refresh: NodeJS.Timeout | undefined;

  /** Commands act as the bridge itself: who may publish to .../set is the broker's ACL. */
  constructor(
    private readonly cfg: Config,
    private readonly self: BoardConfig,
    private readonly src: BridgeSources,
    private readonly log: Logger,
    metrics: Registry,
    private readonly credentials: () => Record<string, string>,
    private readonly loopback: Loopback,
  ) {
    this.commands = metrics.counter('ews_mqtt_commands_total', 'MQTT commands taken by this board as master, by outcome');
    metrics.gauge('ews_mqtt_connected', 'Whether this board is connected to the MQTT broker', () => [[{}, this.client?.connected ? 1 : 0]]);
  }

  private get prefix(): string {
    return this.cfg.mqtt!.prefix;
  }

  /** Connects in the background; boards without `mqtt.url` never even load the MQTT client. */
  async start(): Promise<void> {
    const m = this.cfg.mqtt;
    if (!m) return;
    const { default: mqtt } = await import('mqtt');
    const status = `${this.prefix}/boards/${this.self.id}/status`;
    const c = mqtt.connect(m.url, {
      clientId: `ews-${this.cfg.cluster.name}-${this.self.id}`,
      will: { topic: status, payload: Buffer.from('offline'), retain: true, qos: 1 },
      reconnectPeriod: 1000,
      connectTimeout: 5000,
      queueQoSZero: false,
      clean: true,
    });
    this.client = c;
    c.on('connect', () => {
      this.log.info({ url: m.url }, 'mqtt connected');
      c.publish(status, 'online', { retain: true, qos: 1 });
      this.lastCluster = '';
      this.lastAlarms = '';
      this.lastDevice.clear();
      if (this.master) this.becomeMaster();
    });
    c.on('error', (err) => this.log.debug({ err: err.message }, 'mqtt error'));
    c.on('offline', () => this.log.warn('mqtt broker unreachable; reconnecting'));
    c.on('message', (topic, payload) => this.onMessage(topic, payload));
    // Retained state is the master's to keep right: a deposed master may have published last
    // during an election, so the master says it again now and then even when nothing changed.
    this.refresh = setInterval(() => this.republish(), REFRESH_MS);
    this.refresh.unref();
  }

  /** Publish everything again (a stale master's retained message may be standing). */
  republish(): void {
    this.lastCluster = '';
    this.lastAlarms = '';
    this.lastDevice.clear();
    this.publishState();
  }

  setMaster(master: boolean): void {
    if (master === this.master) return;
    this.master = master;
    if (!this.client?.connected) return;
    if (master) this.becomeMaster();
    else this.client.unsubscribe(`${this.prefix}/devices/+/+/set`);
  }

  /** Publish what changed (the master only). Cheap when nothing did. */
  publishState(): void {
    const c = this.client;
    if (!this.master || !c?.connected) return;
    const cluster = JSON.stringify(this.src.cluster());
    if (cluster !== this.lastCluster) {
      this.lastCluster = cluster;
      c.publish(`${this.prefix}/cluster`, cluster, { retain: true, qos: 0 });
    }
    const alarms = JSON.stringify(this.src.alarms());
    if (alarms !== this.lastAlarms) {
      this.lastAlarms = alarms;
      c.publish(`${this.prefix}/alarms`, alarms, { retain: true, qos: 0 });
    }
    for (const d of this.src.devices()) {
      const s = JSON.stringify(d);
      if (this.lastDevice.get(d.id) === s) continue;
      this.lastDevice.set(d.id, s);
      c.publish(`${this.prefix}/devices/${d.id}/state`, s, { retain: true, qos: 0 });
    }
  }

  async close(): Promise<void> {
    if (this.refresh) clearInterval(this.refresh);
    this.loopback.close();
    const c = this.client;
    if (!c) return;
    if (c.connected) await c.publishAsync(`${this.prefix}/boards/${this.self.id}/status`, 'offline', { retain: true, qos: 1 }).catch(() => undefined);
    await c.endAsync(true).catch(() => undefined);
  }

  private becomeMaster(): void {
    const c = this.client!;
    c.subscribe(`${this.prefix}/devices/+/+/set`, { qos: 1 });
    const discovery = this.cfg.mqtt!.discoveryPrefix;
    if (discovery) for (const m of discoveryMessages(this.cfg, discovery, this.prefix)) c.publish(m.topic, m.payload, { retain: true, qos: 1 });
    this.publishState();
  }

  private onMessage(topic: string, payload: Buffer): void {
    if (!this.master || !topic.startsWith(`${this.prefix}/`)) return;
    const m = SET_RE.exec(topic.slice(this.prefix.length + 1));
    if (!m) return;
    const [, device, action] = m;
    const resultTopic = `${this.prefix}/devices/${device}/${action}/result`;
    // The same codes and statuses HTTP clients get, from the one error table.
    const fail = (err: EwsError) => {
      this.commands.inc({ outcome: 'rejected' });
      this.client?.publish(resultTopic, JSON.stringify({ status: err.status, error: { code: err.code, message: err.message } }), { qos: 0 });
    };
    if (payload.length > PAYLOAD_BYTES_MAX) {
      fail(new EwsError('BODY_TOO_LARGE', `payload over ${PAYLOAD_BYTES_MAX} bytes`));
      return;
    }
    if (this.inflight >= this.cfg.limits.serialQueueMax) {
      fail(new EwsError('DEVICE_BUSY', 'too many MQTT commands in progress'));
      return;
    }
    // Payload: empty, a bare value (42, true), or {"value": …, "key": "idempotency key"}.
    let value: unknown;
    let key: string | undefined;
    const text = payload.toString('utf8').trim();
    if (text !== '') {
      try {
        const v: unknown = JSON.parse(text);
        if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
          value = (v as { value?: unknown }).value;
          const k = (v as { key?: unknown }).key;
          if (k !== undefined) key = String(k);
        } else value = v;
      } catch {
        fail(new EwsError('BAD_REQUEST', 'payload must be empty, a JSON value, or {"value": …, "key": …}'));
        return;
      }
    }
    const headers: Record<string, string> = { 'x-ews-origin': 'mqtt', ...this.credentials() };
    if (key !== undefined) headers['idempotency-key'] = key;
    this.inflight++;
    const path = `/cgi-bin/devices/${encodeURIComponent(device!)}/${encodeURIComponent(action!)}`;
    void this.loopback.post(path, value === undefined ? '' : JSON.stringify({ value }), headers, this.cfg.limits.requestTimeoutMs).then((r) => {
      this.inflight--;
      this.commands.inc({ outcome: String(r.status) });
      let result: unknown;
      try {
        result = JSON.parse(r.body);
      } catch {
        result = null;
      }
      this.client?.publish(resultTopic, JSON.stringify({ status: r.status, ...(typeof result === 'object' && result !== null ? result : {}) }), { qos: 0 });
    });
  }
}
