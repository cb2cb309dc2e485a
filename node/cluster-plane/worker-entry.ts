// The cluster plane's thread (see plane.ts). Bundled on its own as dist/ews-plane.js.
import { parentPort, workerData } from 'node:worker_threads';
import type { PlaneData } from './messages.ts';
import { runPlane } from './plane.ts';
import { ownThreadId } from './thread-priority.ts';

if (parentPort) {
  // The request thread lowers every other thread's priority below this one (thread-priority.ts).
  const tid = ownThreadId();
  if (tid !== undefined) parentPort.postMessage({ t: 'thread', tid });
  void runPlane(workerData as PlaneData, parentPort);
}
