// The floating cluster address: the master holds it, announces it with gratuitous ARP, and a
// board stepping down lets it go. Commands run one at a time; failures are logged and counted,
// never thrown into the election. Like keepalived, a new holder adds the address and announces it
// at once, then again a few times over the first second (a switch or a neighbour that missed the
// first announcement learns it from the next); the announcements stop the moment it lets go.
import { execFile, spawn } from 'node:child_process';
import type { VipConfig } from '../../shared/config.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import type { Logger } from '../log.ts';

export interface CommandResult {
  code: number;
  stderr: string;
}
export type RunCommand = (file: string, args: string[]) => Promise<CommandResult>;
/** A command started and not waited for (an announcement). */
export type StartCommand = (file: string, args: string[]) => void;

/** Gratuitous ARPs after a claim: this many, this far apart (the first goes at once). arping's own -i takes whole seconds. */
export const GARP_COUNT = 5;
export const GARP_INTERVAL_MS = 200;

export const runCommand: RunCommand = (file, args) =>
  new Promise((resolve) => {
    execFile(file, args, { timeout: 5000 }, (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 127) : 0;
      resolve({ code, stderr: String(stderr).trim() || (err && typeof err.code === 'string' ? err.code : '') });
    });
  });

export const startCommand: StartCommand = (file, args) => {
  spawn(file, args, { stdio: 'ignore' }).on('error', () => {});
};

export class VipManager {
  private chain: Promise<void> = Promise.resolve();
  private want = false;
  held = false;
  private retry: NodeJS.Timeout | undefined;
  private readonly errors: Counter;
  private readonly claims: Counter;
  private duplicates = 0;
  private announcing: NodeJS.Timeout[] = [];

  constructor(
    private readonly vip: VipConfig,
    private readonly log: Logger,
    metrics: Registry,
    private readonly run: RunCommand = runCommand,
    private readonly retryMs = 1000,
    private readonly duplicateChecksMax = 3,
    private readonly start: StartCommand = startCommand,
  ) {
    this.errors = metrics.counter('ews_vip_errors_total', 'Failed VIP operations, by step');
    this.claims = metrics.counter('ews_vip_claims_total', 'Times this board put the cluster address on its interface');
    this.claims.inc({}, 0);
    metrics.gauge('ews_vip_held', 'Whether this board holds the cluster address', () => [[{ address: vip.address }, this.held ? 1 : 0]]);
  }

  /** Become (or stay) the holder. */
  claim(): Promise<void> {
    this.want = true;
    return this.enqueue(() => this.doClaim());
  }
  /**
   * Someone else may be answering for the address (a board that claimed it as it booted, say):
   * say again that it is here, as a burst over the next second, so the last word the clients'
   * ARP caches hear is ours, not that of a board whose own announcements were still on their way.
   */
  announce(): Promise<void> {
    return this.enqueue(async () => {
      if (this.held) this.burst();
    });
  }

  /** Gratuitous ARPs: one now, then GARP_COUNT - 1 more GARP_INTERVAL_MS apart (a newer burst replaces the one under way). */
  private burst(): void {
    const { address, interface: dev } = this.vip;
    this.stopAnnouncing();
    const garp = () => this.start('arping', ['-U', '-c', '1', '-I', dev, address]);
    garp();
    for (let i = 1; i < GARP_COUNT; i++) this.announcing.push(setTimeout(garp, i * GARP_INTERVAL_MS));
  }
  /** At boot: a previous run of this board may have died holding the address. */
  releaseStale(): Promise<void> {
    return this.enqueue(async () => {
      if (this.want) return;
      const r = await this.run('ip', ['addr', 'del', `${this.vip.address}/${this.vip.prefix}`, 'dev', this.vip.interface]);
      if (r.code === 0) this.log.warn({ address: this.vip.address }, 'removed a cluster address left by an earlier run');
    });
  }
  release(): Promise<void> {
    this.want = false;
    if (this.retry) clearTimeout(this.retry);
    this.stopAnnouncing();
    return this.enqueue(() => this.doRelease());
  }

  private stopAnnouncing(): void {
    for (const t of this.announcing) clearTimeout(t);
    this.announcing = [];
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(op).catch((err: unknown) => this.log.error({ err }, 'vip operation failed'));
    return this.chain;
  }

  private async doClaim(): Promise<void> {
    if (!this.want) return;
    const { address, prefix, interface: dev } = this.vip;
    if (!this.held) {
      // Duplicate address detection: another holder answers ARP for it (a master that has not stepped down yet).
      // arping waits whole seconds: -w 1 is the shortest check it can make.
      const dad = this.vip.duplicateCheck ? await this.run('arping', ['-D', '-q', '-c', '1', '-w', '1', '-I', dev, address]) : { code: 0, stderr: '' };
      if (!this.want) return;
      if (dad.code === 1 && ++this.duplicates < this.duplicateChecksMax) {
        this.log.warn({ address, check: this.duplicates }, 'cluster address still answered by another board; retrying');
        this.errors.inc({ step: 'duplicate' });
        this.retry = setTimeout(() => void this.claim(), this.retryMs);
        return;
      }
      // Still answered after several checks: a board whose ews died keeps the address in its kernel
      // and serves nothing. Take it and announce; a live holder steps down when it hears our STATE.
      if (dad.code === 1) this.log.error({ address }, 'cluster address held elsewhere; taking it over');
      else if (dad.code !== 0) this.errors.inc({ step: 'dad' });
      this.duplicates = 0;
      const add = await this.run('ip', ['addr', 'add', `${address}/${prefix}`, 'dev', dev]);
      if (add.code !== 0 && !/exists/i.test(add.stderr)) {
        this.errors.inc({ step: 'add' });
        this.log.error({ address, stderr: add.stderr }, 'cannot add cluster address');
        this.retry = setTimeout(() => void this.claim(), this.retryMs);
        return;
      }
      this.held = true;
      this.claims.inc();
      this.log.info({ address, dev }, 'holding cluster address');
      // Announce now and over the next second, without holding up the next operation.
      this.stopAnnouncing();
      this.burst();
      return;
    }
    await this.arp();
  }

  private async arp(): Promise<void> {
    const r = await this.run('arping', ['-U', '-c', '1', '-I', this.vip.interface, this.vip.address]);
    if (r.code !== 0) this.errors.inc({ step: 'arp' });
  }

  private async doRelease(): Promise<void> {
    if (!this.held) return;
    const r = await this.run('ip', ['addr', 'del', `${this.vip.address}/${this.vip.prefix}`, 'dev', this.vip.interface]);
    if (r.code !== 0 && !/Cannot assign|not found|No such/i.test(r.stderr)) {
      this.errors.inc({ step: 'del' });
      this.log.error({ stderr: r.stderr }, 'cannot remove cluster address');
      return;
    }
    this.held = false;
    this.log.info({ address: this.vip.address }, 'released cluster address');
  }
}
