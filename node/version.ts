// The release, as boards report it (kept equal to package.json's version by a test).
export const VERSION = '0.1.0';
