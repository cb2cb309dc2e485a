// How a board tells the others about an Idempotency-Key record: an IDEM packet, sent twice once
// the outcome is known (a lost packet must not cost a device command). An answer too large for
// one packet stays behind: a retry is then sent to the board that holds it.
import type { Config } from '../../shared/config.ts';
import { type IdemRecord, idemWire } from '../../shared/idempotency-store.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';

export function idemBroadcast(mirror: () => ClusterMirror, cfg: Config): (rec: IdemRecord) => void {
  return (rec) => {
    let body = idemWire(rec, cfg.limits.udpPacketBytesMax);
    if (!mirror().broadcastApp('IDEM', body)) {
      body = idemWire(rec, 0);
      mirror().broadcastApp('IDEM', body);
    }
    if (rec.state !== 'pending') setTimeout(() => mirror().broadcastApp('IDEM', body), cfg.cluster.heartbeatMs).unref();
  };
}
