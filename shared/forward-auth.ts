// Requests the master forwards to a board carry `X-EWS-Dispatch`, signed with the cluster key
// over the method, URL, dispatch identity and a hash of the body. A board executes a request
// only if the tag is right, it comes from the master it follows (or a newer one), and its id
// has not been seen before (replay window per master).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const DISPATCH_HEADER = 'x-ews-dispatch';

/** `tree`: the content level the master chose for this request (X-EWS-Tree). */
export interface Dispatch { master: number; term: number; id: number; cls: string; tree: number }

function tag(key: Buffer, method: string, url: string, d: Dispatch, body: Buffer): Buffer {
  const bodyHash = createHash('sha256').update(body).digest();
  return createHmac('sha256', key)
    .update(`ews-fwd\n${method}\n${url}\n${d.master}.${d.term}.${d.id}.${d.cls}.${d.tree}\n`)
    .update(bodyHash)
    .digest()
    .subarray(0, 16);
}

export function signDispatch(key: Buffer, method: string, url: string, d: Dispatch, body: Buffer): string {
  return `${d.master}.${d.term}.${d.id}.${d.cls}.${d.tree}.${tag(key, method, url, d, body).toString('base64url')}`;
}

/** Parses and checks the tag; undefined if the header is malformed or forged. */
export function verifyDispatch(key: Buffer, header: string, method: string, url: string, body: Buffer): Dispatch | undefined {
  const m = /^(\d{1,3})\.(\d{1,10})\.(\d{1,10})\.([A-Za-z0-9_-]{1,32})\.(\d)\.([A-Za-z0-9_-]{22})$/.exec(header);
  if (!m) return undefined;
  const d: Dispatch = { master: Number(m[1]), term: Number(m[2]), id: Number(m[3]), cls: m[4]!, tree: Number(m[5]) };
  const given = Buffer.from(m[6]!, 'base64url');
  const want = tag(key, method, url, d, body);
  return given.length === want.length && timingSafeEqual(given, want) ? d : undefined;
}

/** Remembers recent dispatch ids per master term; ids are increasing, so a window bounds it. */
export class DispatchReplayGuard {
  private readonly seen = new Map<string, { maxId: number; ids: Set<number> }>();
  constructor(private readonly window: number, private readonly mastersMax = 16) {}

  accept(d: Dispatch): boolean {
    const key = `${d.master}.${d.term}`;
    let s = this.seen.get(key);
    if (!s) {
      if (this.seen.size >= this.mastersMax) this.seen.delete(this.seen.keys().next().value!);
      this.seen.set(key, (s = { maxId: 0, ids: new Set() }));
    }
    if (d.id <= s.maxId - this.window || s.ids.has(d.id)) return false;
    s.ids.add(d.id);
    if (d.id > s.maxId) s.maxId = d.id;
    if (s.ids.size > 2 * this.window) for (const id of s.ids) if (id <= s.maxId - this.window) s.ids.delete(id);
    return true;
  }
}
