// Debian's Chromium, driven by playwright-core (no browser download).
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export function launch(): Promise<Browser> {
  return launchWith([]);
}

/** With extra Chromium switches (the HTTPS test pins the cluster's certificate). */
export function launchWith(extra: string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extra],
  });
}
