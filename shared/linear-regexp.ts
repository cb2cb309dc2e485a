// Regular expressions from the config that run on what clients send (class rules) are compiled
// for V8's linear-time engine: no input can make them backtrack catastrophically (a 33-character
// path once blocked a master for seconds). Patterns the engine cannot run in linear time
// (backreferences, lookarounds) are refused with the reason.
import v8 from 'node:v8';

let enabled = false;

/** A linear-time RegExp, or the reason the pattern cannot be one. */
export function linearRegExp(source: string): RegExp | string {
  if (!enabled) {
    // V8's own engine, behind a flag in Node 20; process-wide, set once before the first use.
    v8.setFlagsFromString('--enable-experimental-regexp-engine');
    enabled = true;
  }
  try {
    return new RegExp(source, 'l');
  } catch (e) {
    const m = (e as Error).message;
    return /linear time/.test(m) ? 'cannot run in linear time (backreferences and lookarounds are refused)' : 'is not a valid regular expression';
  }
}
