// The cable's UDP half, loaded by the cluster plane's thread (BoardOptions.planeTransport): it
// follows the pulls and replugs the board's main thread makes on its half (dev/cable.ts).
import { Cable } from './cable.ts';

export const planeTransport = new Cable(true).transport;
