// The load of the benches that move the master on the namespace LAN (handover, upgrade): clients
// through the VIP alternating a keyed POST /cgi-bin/echo?ms=5 and a page /echo?ms=5 (a new
// connection each), beside a probe of the VIP's /healthz every 10 ms that notes who answered.
import { request, VIP } from '../hw-test/lan.ts';

export const PROBE_EVERY_MS = 10;
export const PROBE_TIMEOUT_MS = 300;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface VipLoadResult {
  /** When each probe was answered (performance.now()) and by which board. */
  probes: Array<[number, string | undefined]>;
  requests: number;
  non2xx: number;
  /** The non-2xx answers by status and error code. */
  codes: Record<string, number>;
  /** Connections that failed (reset or timed out). */
  failed: number;
}

/** Start the load; `stop()` ends it and says what it saw. `tag` keeps the keys of rounds apart. */
export function vipLoad(tag: string, clients: number): { stop(): Promise<VipLoadResult> } {
  let stopped = false;
  const out: VipLoadResult = { probes: [], requests: 0, non2xx: 0, codes: {}, failed: 0 };
  const probe = (async () => {
    const inflight: Promise<void>[] = [];
    while (!stopped) {
      inflight.push(
        request(VIP, '/healthz', { timeoutMs: PROBE_TIMEOUT_MS }).then((r) => {
          if (r.status === 200) out.probes.push([performance.now(), (JSON.parse(r.body) as { board: string }).board]);
        }),
      );
      await sleep(PROBE_EVERY_MS);
    }
    await Promise.all(inflight);
  })();
  const client = async (c: number) => {
    for (let i = 0; !stopped; i++) {
      const r =
        i % 2 === 0
          ? await request(VIP, '/cgi-bin/echo?ms=5', { method: 'POST', body: '{}', headers: { 'idempotency-key': `${tag}-${c}-${i}` }, timeoutMs: 5000 })
          : await request(VIP, '/echo?ms=5', { timeoutMs: 5000 });
      out.requests++;
      if (r.status === 0) out.failed++;
      else if (r.status < 200 || r.status > 299) {
        out.non2xx++;
        const code = `${r.status} ${/"code":"([A-Z_]+)"/.exec(r.body)?.[1] ?? ''}`.trim();
        out.codes[code] = (out.codes[code] ?? 0) + 1;
      }
    }
  };
  const running = Array.from({ length: clients }, (_, c) => client(c));
  return {
    stop: async () => {
      stopped = true;
      await Promise.all([...running, probe]);
      return out;
    },
  };
}
