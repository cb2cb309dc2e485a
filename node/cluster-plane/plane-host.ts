// Where the cluster plane runs, as the mirror sees it: a thread of its own (the bundled
// dist/ews-plane.js, or in a checkout its TypeScript through tsx), or this thread.
import { EventEmitter } from 'node:events';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { FromPlane, PlaneData, ToPlane } from './messages.ts';
import { runPlane } from './plane.ts';

/** In the bundle the plane's thread runs dist/ews-plane.js beside ews.js. */
const BUNDLED = !import.meta.url.endsWith('.ts');

/** Where the plane runs, as the mirror sees it: messages both ways, 'error', and an end. */
export type PlaneHost = EventEmitter & { postMessage(m: ToPlane): void; terminate(): Promise<unknown> };

/** The plane's thread: the bundled file, or in a checkout its TypeScript through tsx's loader (registered in that thread). */
export function planeThread(data: PlaneData): PlaneHost {
  const limits = { maxOldGenerationSizeMb: 24, maxYoungGenerationSizeMb: 2 };
  if (BUNDLED) return new Worker(new URL('./ews-plane.js', import.meta.url), { workerData: data, execArgv: [], resourceLimits: limits });
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./worker-entry.ts', import.meta.url).href;
  const boot = `(async () => { const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(entry)}); })()`;
  return new Worker(boot, { eval: true, workerData: data, execArgv: [], resourceLimits: limits });
}

/**
 * The plane on this thread (cluster.planeThread false): the same code and the same messages, over
 * a channel inside the thread (structured clones, delivered on a later turn, as to a thread), and
 * no second isolate. It beats only when this thread runs.
 */
export class InlinePlane extends EventEmitter {
  private readonly channel = new MessageChannel();

  constructor(data: PlaneData) {
    super();
    this.channel.port1.on('message', (m: FromPlane) => this.emit('message', m));
    runPlane(data, this.channel.port2).catch((err: unknown) => this.emit('error', err));
  }

  postMessage(m: ToPlane): void {
    this.channel.port1.postMessage(m);
  }

  terminate(): Promise<void> {
    this.channel.port1.close();
    this.channel.port2.close();
    return Promise.resolve();
  }
}
