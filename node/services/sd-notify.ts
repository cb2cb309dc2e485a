// systemd readiness and watchdog (Type=notify, WatchdogSec): the pings come from this process's
// event loop, so a wedged loop stops them and systemd restarts the board. Without NOTIFY_SOCKET
// (not under systemd) this does nothing.
import { execFile } from 'node:child_process';

function notify(...args: string[]): void {
  execFile('systemd-notify', [`--pid=${process.pid}`, ...args], { timeout: 2000 }, () => {});
}

export function startSystemdNotify(): () => void {
  if (!process.env.NOTIFY_SOCKET) return () => {};
  notify('--ready');
  const usec = Number(process.env.WATCHDOG_USEC ?? 0);
  if (!(usec > 0)) return () => {};
  const t = setInterval(() => notify('WATCHDOG=1'), Math.max(500, usec / 1000 / 3));
  t.unref();
  return () => clearInterval(t);
}
