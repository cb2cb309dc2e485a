// The system's timers, as the cluster link, the plane and the mirror take them (shared/clock.ts's
// Timers); the seeded simulator gives them virtual ones instead.
import type { Timers } from '../../shared/clock.ts';

export const systemTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  setInterval: (fn, ms) => setInterval(fn, ms),
  clear: (t) => clearTimeout(t as NodeJS.Timeout | undefined),
  setImmediate: (fn) => void setImmediate(fn),
};
