// The release, as boards report it (kept equal to package.json's version by a test). A board
// running from a release bundle reports the bundle's version: `npm run pack` writes it into
// release.json beside ews.js (a second bundle of the same code may carry a raised one).
import { readFileSync } from 'node:fs';

const PACKAGE_VERSION = '0.1.0';

function releaseVersion(): string | undefined {
  try {
    const v = (JSON.parse(readFileSync(new URL('./release.json', import.meta.url), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' && /^[0-9A-Za-z][0-9A-Za-z.+-]{0,31}$/.test(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

export const VERSION = releaseVersion() ?? PACKAGE_VERSION;
