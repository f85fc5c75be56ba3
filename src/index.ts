/**
 * prewarm as a library, for cdk8s users' own apps: load and validate ImageCache specs, then add
 * prewarm's charts to an App, or place a {@link PullDaemonSet} in a chart of your own.
 */
export { addPrewarmCharts, createApp, synthYaml, type SynthOptions } from './synth/app.js';
export { ClusterChart, NamespaceChart, type ClusterChartProps, type NamespaceChartProps } from './synth/charts.js';
export { PullDaemonSet, type PullDaemonSetProps, type ReconcilerProps } from './synth/pull-daemonset.js';
export { ReconcilerPodMonitor, type ReconcilerPodMonitorProps } from './synth/pod-monitor.js';
export { loadBundle, MAX_RUN_SPEC_BYTES, type LoadOptions, type LoadResult } from './imagecache/load.js';
export { MAX_SPEC_FILE_BYTES } from './files/read.js';
export { parseFiles, type ParseOptions, type ParseResult, type SourceFile } from './imagecache/parse.js';
export { buildBundle, type BundleResult } from './imagecache/bundle.js';
export { formatDiagnostic, formatDiagnostics, SpecError, type Diagnostic, type Location, type Skipped } from './imagecache/errors.js';
export type { Bundle, CacheEntry, Gate, ImageCache, Pool, PoolOrigin, PoolSettings, Toleration } from './imagecache/model.js';
export { API_VERSIONS, type ApiVersion } from './imagecache/model.js';
export { LOCK_FILE, parseLock, renderLock, type SizeEntry, type SizeLock } from './imagecache/sizes.js';
export { parseImageRef, type ImageRef } from './oci/reference.js';
export { VERSION, DEFAULT_RECONCILER_IMAGE } from './version.js';
