/**
 * The shapes of an ImageCache as written: the raw fields of each part, and the field set each API
 * version accepts (kube-fledged's is a subset of prewarm's), with the reader of every field.
 */
import { DEFAULT_GATE_TAINT_KEY, DEFAULTS, GROUP, LANES, LIMITS } from '../contract/names.js';
import { checkDns1123Label, checkDns1123Subdomain, checkLabelValue, checkQualifiedName } from './k8s-validation.js';
import { API_VERSIONS, type ApiVersion } from './model.js';
import {
  bool,
  checked,
  ignored,
  int,
  list,
  object,
  refused,
  str,
  stringMap,
  type Field,
  type FieldDoc,
  type Read,
  type Shape,
} from './read.js';
import type { ImageRef } from '../oci/reference.js';
import { image, durationIn, maxUnavailable, oneOf } from './fields.js';
import { formatDuration } from './duration.js';

/** The rollout's maxUnavailable when no ImageCache of the pool sets one. */
export const DEFAULT_MAX_UNAVAILABLE = '10%';

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

/** A nested object field: its reader, and its fields for the spec reference. */
function nested<T extends object>(shape: Shape<T>, doc: FieldDoc): Field<Read<T>> {
  return { read: object(shape), fields: shape, doc };
}

/** A list of objects, each read by `shape`. */
function listOf<T extends object>(shape: Shape<T>, doc: FieldDoc, opts: { nonEmpty?: boolean } = {}): Field<Read<T>[]> {
  return { read: list(object(shape), opts), fields: shape, doc };
}

const metadataShape: Shape<RawMetadata> = {
  name: {
    read: checked(checkDns1123Subdomain, 'name'),
    doc: {
      type: 'string',
      limits: 'a DNS-1123 subdomain',
      description: "The ImageCache's name; with the namespace, where diagnostics point.",
    },
  },
  namespace: {
    read: checked(checkDns1123Label, 'namespace'),
    doc: {
      type: 'string',
      default: "the invocation's `--namespace` (`prewarm` unless set)",
      limits: 'a DNS-1123 label',
      description: "Where the pool's DaemonSets run. Argo CD's AppProject `destinations` limit where that lands.",
    },
  },
  generateName: { read: str, doc: { type: 'string', description: 'Accepted as kubectl writes it; not used.' } },
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
  key: {
    read: checked((v) => (v === '' ? undefined : checkQualifiedName(v)), 'toleration key'),
    doc: {
      type: 'string',
      limits: 'a qualified name, or empty',
      description: 'The taint key; empty with `operator: Exists` tolerates every taint.',
    },
  },
  operator: {
    read: oneOf(['Exists', 'Equal', '']),
    doc: { type: 'string', default: '`Equal`', limits: '`Exists`, `Equal` or empty', description: 'How the value is matched.' },
  },
  value: {
    read: checked(checkLabelValue, 'toleration value'),
    doc: { type: 'string', limits: 'a label value', description: 'The taint value, with `operator: Equal`.' },
  },
  effect: {
    read: oneOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute', '']),
    doc: {
      type: 'string',
      limits: '`NoSchedule`, `PreferNoSchedule`, `NoExecute` or empty',
      description: 'The taint effect; empty matches every effect.',
    },
  },
  tolerationSeconds: {
    read: int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    doc: { type: 'integer', description: 'How long a `NoExecute` taint is tolerated; needs `effect: NoExecute`.' },
  },
};

const nodeSelector = stringMap(checkQualifiedName, checkLabelValue, { key: 'label key', value: 'label value' });

/** Entry fields kube-fledged defines; prewarm adds to them. */
const fledgedEntry: Shape<Pick<RawEntry, 'images' | 'nodeSelector'>> = {
  images: {
    read: list(image, { nonEmpty: true }),
    required: true,
    doc: {
      type: 'list of image references',
      limits: 'at least one; a digest by `sha256`, `sha384` or `sha512`; at most 255 characters once normalised',
      description: 'The images to warm. A reference without tag or digest becomes `:latest`, with a warning.',
    },
  },
  nodeSelector: {
    read: nodeSelector,
    doc: {
      type: 'map of label key to value',
      default: 'every node',
      description: 'Labels a node must all carry (ANDed) to be in the pool.',
    },
  },
};
const prewarmEntry: Shape<RawEntry> = {
  ...fledgedEntry,
  tolerations: listOf(tolerationShape, {
    type: 'list of tolerations',
    default: 'none (kube-fledged documents: every taint)',
    description: "Taints the pool's pods tolerate, emitted whole; with the selector, they define the pool.",
  }),
  pool: {
    read: checked((v) => checkDns1123Label(v) ?? (v.length > 40 ? 'must be at most 40 characters' : undefined), 'pool name'),
    doc: {
      type: 'string',
      default: 'derived from the selector and tolerations',
      limits: 'a DNS-1123 label of at most 40 characters',
      description: "The pool's name: its DaemonSets' and node label's.",
    },
  },
};

const secretRef: Shape<{ name: string }> = {
  name: {
    read: checked(checkDns1123Subdomain, 'Secret name'),
    required: true,
    doc: { type: 'string', limits: 'a DNS-1123 subdomain', description: "The pull Secret's name." },
  },
};

const cacheSpecDoc: FieldDoc = {
  type: 'list of entries',
  limits: 'at least one',
  description: 'Images and where to warm them; entries with the same namespace, selector and tolerations form one pool.',
};
const imagePullSecrets = listOf(secretRef, {
  type: 'list of Secret references',
  default: 'none',
  description: "Pull Secrets in the ImageCache's namespace; every one is used by the pool's pods.",
});

const fledgedSpec: Shape<Pick<RawSpec, 'cacheSpec' | 'imagePullSecrets'>> = {
  cacheSpec: { ...listOf(fledgedEntry as Shape<RawEntry>, cacheSpecDoc, { nonEmpty: true }), required: true },
  imagePullSecrets,
};

/**
 * Why a spec may not name the helper image: its binary runs in every image container of the pool
 * (on the host network for early pullers), so it is code, and only the invocation chooses code.
 */
export const HELPER_IMAGE_REFUSED =
  'a spec may not choose the helper image: its binary runs in every container of the pool, so only the synth invocation chooses it ' +
  "(prewarm synth --helper-image, or the Argo CD plugin's PREWARM_PLUGIN_HELPER_IMAGE); remove this field";

/** Pool-wide settings: every prewarm.dev ImageCache of a pool must agree on them, defaults included. */
const prewarmSpec: Shape<RawSpec> = {
  cacheSpec: { ...listOf(prewarmEntry, cacheSpecDoc, { nonEmpty: true }), required: true },
  imagePullSecrets,
  helperImage: {
    read: refused(HELPER_IMAGE_REFUSED),
    doc: {
      type: 'refused',
      default: '—',
      limits: 'never in a spec: the invocation chooses it (`prewarm synth --helper-image`)',
      description: "The helper init container's image, where the pool does not run the sleeper: code, so only the invocation names it.",
    },
  },
  priorityClassName: {
    read: checked(checkDns1123Subdomain, 'PriorityClass name'),
    doc: { type: 'string', default: 'none', limits: 'a DNS-1123 subdomain', description: "The PriorityClass of the pool's pods." },
  },
  rollout: nested(
    {
      maxUnavailable: {
        read: maxUnavailable,
        doc: {
          type: 'integer or percentage',
          default: `\`${DEFAULT_MAX_UNAVAILABLE}\``,
          limits: 'from 1, or from 1% to 100%',
          description: 'How many nodes re-pull at once after a spec change; new nodes are never throttled.',
        },
      },
    },
    { type: 'object', description: "The holder DaemonSet's rolling update." },
  ),
  gate: nested<RawGate>(
    {
      enabled: { read: bool, doc: { type: 'boolean', default: '`true`', description: '`false` turns gating off for the pool.' } },
      taintKey: {
        read: checked(checkQualifiedName, 'taint key'),
        doc: {
          type: 'string',
          default: `\`${DEFAULT_GATE_TAINT_KEY}\``,
          limits: `under \`${GROUP}/\`, or a key the invocation allows (\`--allow-gate-key\`); never one the pool tolerates or Kubernetes sets itself`,
          description: "The gate taint's key; pools with the same key gate a node together.",
        },
      },
      deadline: {
        read: durationIn(LIMITS.deadlineSeconds),
        doc: {
          type: 'duration',
          default: `\`${formatDuration(DEFAULTS.deadlineSeconds)}\``,
          limits: rangeText(LIMITS.deadlineSeconds),
          description: 'Past it the pool turns partial and lets go of the gate, whatever is missing.',
        },
      },
    },
    { type: 'object', description: 'The gate taint that keeps workloads off a node until its pools are warm.' },
  ),
  refresh: nested(
    {
      interval: {
        read: durationIn(LIMITS.refreshSeconds),
        doc: {
          type: 'duration',
          default: '`0s` (off)',
          limits: `${rangeText(LIMITS.refreshSeconds)}; at least the invocation's floor (--min-refresh-interval, default 5m)`,
          description: "How often each node checks every tag's digest in the registry and re-pulls a tag that moved.",
        },
      },
    },
    { type: 'object', description: 'Re-pulling tags that moved in the registry.' },
  ),
  lanes: {
    read: int(LANES.min, LANES.max),
    doc: {
      type: 'integer',
      default: `\`${LANES.default}\``,
      limits: `${LANES.min} to ${LANES.max}`,
      description: "How many pods pull the pool's images at once while a node warms; 1: the holder alone, L > 1: L burst pullers.",
    },
  },
  earlyPull: {
    read: bool,
    doc: {
      type: 'boolean',
      default: '`false`',
      limits: 'only in a namespace the invocation owns, and with `lanes` above 1',
      description: 'The burst pullers pull before the node is Ready, on the host network.',
    },
  },
};

/** A duration range as the reference writes it. */
function rangeText(range: { readonly min: number; readonly max: number }): string {
  return `${formatDuration(range.min)} to ${formatDuration(range.max)}`;
}

/** The fields a document of `apiVersion` may have, with the reader of each. */
export function documentShape(apiVersion: ApiVersion): Shape<RawDocument> {
  const spec = apiVersion === API_VERSIONS.prewarm ? prewarmSpec : (fledgedSpec as Shape<RawSpec>);
  return {
    apiVersion: { read: str, required: true, doc: { type: 'string', description: 'Which dialect the document is written in.' } },
    kind: { read: str, required: true, doc: { type: 'string', limits: '`ImageCache`', description: 'The kind.' } },
    metadata: { ...nested(metadataShape, { type: 'object', description: "The ImageCache's identity." }), required: true },
    spec: { ...nested(spec, { type: 'object', description: 'What to warm, where and how.' }), required: true },
    status: { read: ignored },
  };
}
