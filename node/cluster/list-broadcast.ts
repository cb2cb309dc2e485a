// A list shared with every board (logged-out sessions, log entries) in as few packets as fit,
// each packet sent twice: a lost packet must not lose an entry.

/** Bytes a packet's envelope, header and tag take besides the body's list. */
const OVERHEAD_BYTES = 128;

export function broadcastList<T>(send: (body: { list: T[] }) => void, list: readonly T[], packetBytesMax: number, resendAfterMs: number): void {
  const room = packetBytesMax - OVERHEAD_BYTES;
  const bodies: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const e of list) {
    const n = Buffer.byteLength(JSON.stringify(e)) + 1;
    if (cur.length > 0 && bytes + n > room) {
      bodies.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += n;
  }
  if (cur.length > 0) bodies.push(cur);
  const go = () => {
    for (const b of bodies) send({ list: b });
  };
  go();
  if (bodies.length > 0) setTimeout(go, resendAfterMs).unref();
}
