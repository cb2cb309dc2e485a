// The cluster plane's thread (see plane.ts). Bundled on its own as dist/ews-plane.js.
import { parentPort, workerData } from 'node:worker_threads';
import type { PlaneData } from './messages.ts';
import { runPlane } from './plane.ts';

if (parentPort) void runPlane(workerData as PlaneData, parentPort);
