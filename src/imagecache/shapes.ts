/**
 * The shapes of an ImageCache as written: the raw fields of each part, and the field set each API
 * version accepts (kube-fledged's is a subset of prewarm's), with the reader of every field.
 */
import { LIMITS } from '../contract/names.js';
import { checkDns1123Label, checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './k8s-validation.js';
import { API_VERSIONS, type ApiVersion } from './model.js';
import { bool, checked, ignored, int, list, object, refused, str, stringMap, type Read, type Shape } from './read.js';
import type { ImageRef } from '../oci/reference.js';
import { image, durationIn, maxUnavailable, oneOf } from './fields.js';
import { LANES } from './defaults.js';

/** `metadata` as written. */
export interface RawMetadata {
  name: string;
  namespace: string;
  generateName: string;
  labels: true;
  annotations: true;
  uid: true;
  resourceVersion: true;
  generation: true;
  creationTimestamp: true;
  managedFields: true;
  finalizers: true;
  ownerReferences: true;
  selfLink: true;
  deletionTimestamp: true;
  deletionGracePeriodSeconds: true;
}

/** A toleration as written. */
export interface RawToleration {
  key: string;
  operator: string;
  value: string;
  effect: string;
  tolerationSeconds: number;
}

/** A `cacheSpec` entry as written. */
export interface RawEntry {
  images: ImageRef[];
  nodeSelector: Record<string, string>;
  tolerations: Read<RawToleration>[];
  pool: string;
}

/** `spec.gate` as written. */
export interface RawGate {
  enabled: boolean;
  taintKey: string;
  deadline: number;
}

/** `spec` as written: kube-fledged's fields and prewarm's own. */
export interface RawSpec {
  cacheSpec: Read<RawEntry>[];
  imagePullSecrets: Read<{ name: string }>[];
  /** Refused: only the synth invocation chooses code that runs ({@link HELPER_IMAGE_REFUSED}). */
  helperImage: true;
  priorityClassName: string;
  rollout: Read<{ maxUnavailable: number | string }>;
  gate: Read<RawGate>;
  refresh: Read<{ interval: number }>;
  lanes: number;
  earlyPull: boolean;
}

/** A whole ImageCache document as written. */
export interface RawDocument {
  apiVersion: string;
  kind: string;
  metadata: Read<RawMetadata>;
  spec: Read<RawSpec>;
  status: true;
}

const metadataShape: Shape<RawMetadata> = {
  name: { read: checked(checkDns1123Subdomain, 'name') },
  namespace: { read: checked(checkDns1123Label, 'namespace') },
  generateName: { read: str },
  labels: { read: ignored },
  annotations: { read: ignored },
  uid: { read: ignored },
  resourceVersion: { read: ignored },
  generation: { read: ignored },
  creationTimestamp: { read: ignored },
  managedFields: { read: ignored },
  finalizers: { read: ignored },
  ownerReferences: { read: ignored },
  selfLink: { read: ignored },
  deletionTimestamp: { read: ignored },
  deletionGracePeriodSeconds: { read: ignored },
};

/**
 * Toleration fields as core/v1 `ValidateTolerations` reads them: an empty key matches every key (the
 * operator must then be `Exists`), an empty operator means `Equal`, an empty effect matches every
 * effect, and tolerationSeconds may be any integer (taint eviction reads a negative one as 0).
 */
const tolerationShape: Shape<RawToleration> = {
  key: { read: checked((v) => (v === '' ? undefined : checkQualifiedName(v)), 'toleration key') },
  operator: { read: oneOf(['Exists', 'Equal', '']) },
  value: { read: checked(checkLabelValue, 'toleration value') },
  effect: { read: oneOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute', '']) },
  tolerationSeconds: { read: int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) },
};

const nodeSelector = stringMap(checkQualifiedName, checkLabelValue, { key: 'label key', value: 'label value' });

/** Entry fields kube-fledged defines; prewarm adds to them. */
const fledgedEntry: Shape<Pick<RawEntry, 'images' | 'nodeSelector'>> = {
  images: { read: list(image, { nonEmpty: true }), required: true },
  nodeSelector: { read: nodeSelector },
};
const prewarmEntry: Shape<RawEntry> = {
  ...fledgedEntry,
  tolerations: { read: list(object(tolerationShape)) },
  pool: { read: checked((v) => checkDns1123Label(v) ?? (v.length > 40 ? 'must be at most 40 characters' : undefined), 'pool name') },
};

const secretRef = object<{ name: string }>({ name: { read: checked(checkDns1123Subdomain, 'Secret name'), required: true } });

const fledgedSpec: Shape<Pick<RawSpec, 'cacheSpec' | 'imagePullSecrets'>> = {
  cacheSpec: { read: list(object(fledgedEntry as Shape<RawEntry>), { nonEmpty: true }), required: true },
  imagePullSecrets: { read: list(secretRef) },
};
/**
 * Why a spec may not name the helper image: its binary runs in every image container of the pool
 * (on the host network for early pullers), so it is code, and only the invocation chooses code.
 */
export const HELPER_IMAGE_REFUSED =
  'a spec may not choose the helper image: its binary runs in every container of the pool, so only the synth invocation chooses it ' +
  "(prewarm synth --helper-image, or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE); remove this field";

const prewarmSpec: Shape<RawSpec> = {
  cacheSpec: { read: list(object(prewarmEntry), { nonEmpty: true }), required: true },
  imagePullSecrets: fledgedSpec.imagePullSecrets,
  helperImage: { read: refused(HELPER_IMAGE_REFUSED) },
  priorityClassName: { read: checked(checkDns1123Subdomain, 'PriorityClass name') },
  rollout: { read: object({ maxUnavailable: { read: maxUnavailable } }) },
  gate: {
    read: object<RawGate>({
      enabled: { read: bool },
      taintKey: { read: checked(checkQualifiedName, 'taint key') },
      deadline: { read: durationIn(LIMITS.deadlineSeconds) },
    }),
  },
  refresh: { read: object({ interval: { read: durationIn(LIMITS.refreshSeconds) } }) },
  lanes: { read: int(LANES.min, LANES.max) },
  earlyPull: { read: bool },
};

/** The fields a document of `apiVersion` may have, with the reader of each. */
export function documentShape(apiVersion: ApiVersion): Shape<RawDocument> {
  const spec = apiVersion === API_VERSIONS.prewarm ? prewarmSpec : (fledgedSpec as Shape<RawSpec>);
  return {
    apiVersion: { read: str, required: true },
    kind: { read: str, required: true },
    metadata: { read: object(metadataShape), required: true },
    spec: { read: object(spec), required: true },
    status: { read: ignored },
  };
}
