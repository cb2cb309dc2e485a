// Constants the build defines per content level (deploy/site-bundle.ts): esbuild replaces them
// and drops the code a level does not have.

/** The content level this bundle is for: 1 text only, 2 light, 3 full. */
declare const EWS_LEVEL: number;
/** Error codes after which another board may answer (from shared/errors.ts's table). */
declare const EWS_RETRY_CODES: readonly string[];
