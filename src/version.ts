/** prewarm's version; a test keeps it equal to package.json's. Names the default sidecar image tag. */
export const VERSION = '0.1.0';

/** Default image of the sidecar reconciler, built from src/reconciler (see its README). */
export const DEFAULT_RECONCILER_IMAGE = `ghcr.io/prewarm-dev/reconciler:${VERSION}`;
