/**
 * The pull DaemonSet of one pool: one sleeping container per image, so kubelet image GC never
 * removes an image in use. See docs/architecture.md#the-pull-pod.
 */
import { ApiObject, Duration, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import type { Pool } from '../imagecache/model.js';
import type { ImageRef } from '../oci/reference.js';
import type { PullerLane } from './lanes.js';
import {
  DEFAULTS,
  LABEL_COMPONENT,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_PART_OF,
  LABEL_POOL_MEMBER,
  MANAGED_BY,
  NodeState,
  POOLS_MOUNT_PATH,
  SIDECAR_CONTAINER,
  SIDECAR_IMAGE_CONTAINER,
  type SleeperArch,
  STARTUP_PATH,
} from '../contract/names.js';
import { nodeAnnotationKey, nodeLabelKey } from '../contract/identity.js';
import { COMPONENT, holderSelector, pullerSelector, Role } from '../contract/roles.js';
import { renderSidecarEnv } from '../contract/sidecar-env.js';
import { patchPullDaemonSet, type HttpProbe, type PodTemplatePatches } from './escape-hatches.js';
import {
  daemonSetName,
  HELPER_CONTAINER,
  HELPER_VOLUME,
  imageContainerName,
  METRICS_PORT_NAME,
  POOLS_VOLUME,
  pullerDaemonSetName,
  pullSecretVolumeName,
} from './naming.js';
import { SERVICE_ACCOUNT } from '../contract/access-names.js';
import { podMemoryRequest } from './checks/memory.js';
import { checkPoolObject, type Manifest } from './checks/output.js';
import { addCheck } from './checks/validation.js';
import { CONTAINER_SECURITY, HELPER_RESOURCES, IMAGE_RESOURCES, POD_SECURITY, SIDECAR_RESOURCES } from './security.js';
import { POOLS_CONFIGMAP, PULL_SECRETS_MOUNT_PATH } from '../contract/names.js';

/** Where the sleep binary (the sleeper, or the helper's busybox) is mounted in every container. */
export const HELPER_MOUNT = '/prewarm';
/** The copied busybox; it dispatches on its first argument. */
export const HELPER_BINARY = `${HELPER_MOUNT}/busybox`;
/** Where the helper image keeps its static busybox. */
export const HELPER_SOURCE = '/bin/busybox';
/** The default `--helper-image`, pinned by digest so the code every image container runs cannot move. */
export const DEFAULT_HELPER_IMAGE =
  'docker.io/library/busybox:1.36.1-musl@sha256:2f9af5cf39068ec3a9e124feceaa11910c511e23a1670dcfdff0bc16793545fb';
/** The helper init container's command: the only thing it ever runs. */
export const HELPER_COMMAND: readonly string[] = [HELPER_SOURCE, 'cp', HELPER_SOURCE, HELPER_BINARY];
const SLEEPER_FILE = 'sleep';
/** The sleeper, as the image containers run it. */
export const SLEEPER_BINARY = `${HELPER_MOUNT}/${SLEEPER_FILE}`;
/** Longest sleep busybox accepts portably (2^31-1 s, about 68 years). */
const SLEEP_FOREVER = '2147483647';
/** What an image container runs with the helper. */
export const HELPER_SLEEP_COMMAND: readonly string[] = [HELPER_BINARY, 'sleep', SLEEP_FOREVER];
/** What an image container runs with the sleeper. */
export const SLEEPER_COMMAND: readonly string[] = [SLEEPER_BINARY];
/** Read and execute for all: the pod's non-root user runs it. */
const SLEEPER_MODE = 0o555;

/** The sleeper a pool's pods run, from the namespace's sleeper ConfigMap. */
export interface SleeperProps {
  /** Holds the sleeper of every architecture, keyed by architecture. */
  readonly configMap: string;
  /** The architecture of every node the pool selects. */
  readonly arch: SleeperArch;
}

/** The sidecar reconciler of a pull pod. */
export interface ReconcilerProps {
  readonly image: string;
  /** Port of the Prometheus endpoint. @default 9464 */
  readonly metricsPort?: number;
  /** Seconds past the node's longest deadline before the fail-safe lifts a gate. @default FAILSAFE_DEFAULT_GRACE_SECONDS */
  readonly failsafeGraceSeconds?: number;
}

/** Grace of a puller's pods: they only sleep, and leave as soon as the node is warm. */
const PULLER_GRACE_SECONDS = 1;

/** Props of {@link PullDaemonSet}. */
export interface PullDaemonSetProps {
  /** The pool whose images the DaemonSet keeps on every matching node. */
  readonly pool: Pool;
  /**
   * The sidecar that marks nodes warm and lifts the gating taint.
   * @default - no sidecar: images are cached, but nodes are never labelled and gates never lift
   */
  readonly reconciler?: ReconcilerProps;
  /** Makes this DaemonSet one of the pool's burst pullers (docs/architecture.md#lanes-burst-pullers). @default - the holder */
  readonly puller?: PullerLane;
  /** The sidecar's image, for the early puller that pulls only it (lane `0`). Only with {@link puller}. @default - none */
  readonly sidecarImage?: string;
  /**
   * The sleeper every image container runs, mounted from a ConfigMap: no init container.
   * @default - the helper: an init container copies busybox from {@link helperImage}
   */
  readonly sleeper?: SleeperProps;
  /** Where the helper copies busybox from: the invocation's choice, never a spec's. @default DEFAULT_HELPER_IMAGE */
  readonly helperImage?: string;
}

/** What the holder and a burst puller do differently, decided once from the props. */
interface RoleParts {
  readonly role: Role;
  readonly images: readonly ImageRef[];
  /** A puller never runs the sidecar: the holder's watches every pod of the pool. */
  readonly reconciler: ReconcilerProps | undefined;
  /** A label no other DaemonSet's pods carry; no DaemonSet selects on the member label the sidecar watches. */
  readonly selector: Record<string, string>;
  readonly name: string;
  readonly graceSeconds: number;
  /** On the host network, so its sandbox needs no CNI; never the holder, whose sidecar needs it. */
  readonly early: boolean;
  /** The pullers' placement adds the start-up tolerations in early pools; the holder's matches pools.json. */
  readonly where: Pick<PodTemplatePatches, 'placement' | 'nodeRequirements'>;
  /** Its lane, for messages ('' for the holder). */
  readonly lane: string;
}

/** The holder's parts, or a burst puller's when the props name its lane. */
function roleParts(props: PullDaemonSetProps): RoleParts {
  const { pool, puller } = props;
  if (puller === undefined)
    return {
      role: Role.Holder,
      images: pool.images,
      reconciler: props.reconciler,
      selector: holderSelector(pool.id),
      name: daemonSetName(pool.id),
      graceSeconds: 10,
      early: false,
      where: { placement: pool.placement },
      lane: '',
    };
  return {
    role: Role.Puller,
    images: puller.images,
    reconciler: undefined,
    selector: pullerSelector(pool.id, puller.key),
    name: pullerDaemonSetName(pool.id, puller.key),
    graceSeconds: PULLER_GRACE_SECONDS,
    early: pool.settings.earlyPull,
    where: {
      placement: pool.pullerPlacement,
      nodeRequirements: [{ key: nodeLabelKey(pool.id), operator: 'NotIn' as const, values: [NodeState.Warm, NodeState.Partial] }],
    },
    lane: ` in lane ${puller.key}`,
  };
}

/** One pool's pull DaemonSet: the holder (every image, and the sidecar) or one of its burst pullers. */
export class PullDaemonSet extends Construct {
  /** The pool id ({@link Pool.id}): the DaemonSet's selector value and the node label's name part. */
  readonly poolId: string;
  readonly pool: Pool;
  readonly workload: kplus.DaemonSet;

  constructor(scope: Construct, id: string, props: PullDaemonSetProps) {
    super(scope, id);
    const { pool, sleeper } = props;
    const role = roleParts(props);
    if (role.images.length === 0 && props.sidecarImage === undefined)
      throw new Error(`pool ${pool.namespace}/${pool.id} has no images${role.lane}`);
    this.pool = pool;
    this.poolId = pool.id;

    const labels = {
      [LABEL_MANAGED_BY]: MANAGED_BY,
      [LABEL_NAME]: 'prewarm',
      [LABEL_PART_OF]: 'prewarm',
      [LABEL_COMPONENT]: COMPONENT[role.role],
      ...role.selector,
      [LABEL_POOL_MEMBER]: this.poolId,
    };
    const binVolume = this.binVolume(sleeper);
    const mountBin = { path: HELPER_MOUNT, volume: binVolume, readOnly: true };
    const sleepCommand = [...(sleeper === undefined ? HELPER_SLEEP_COMMAND : SLEEPER_COMMAND)];

    this.workload = new kplus.DaemonSet(this, 'Resource', {
      metadata: { name: role.name, namespace: pool.namespace, labels },
      podMetadata: { labels },
      select: false,
      securityContext: POD_SECURITY,
      // No container gets a token by default; the sidecar alone gets one (see escape-hatches.ts).
      automountServiceAccountToken: false,
      ...(role.reconciler === undefined
        ? {}
        : { serviceAccount: kplus.ServiceAccount.fromServiceAccountName(this, 'sa', SERVICE_ACCOUNT) }),
      // busybox sleep ignores SIGTERM as PID 1: a short grace keeps drains and rollouts quick.
      terminationGracePeriod: Duration.seconds(role.graceSeconds),
      volumes: [binVolume],
      // `Default`: the node's resolver, never cluster DNS, which is unreachable before the CNI is up.
      ...(role.early ? { hostNetwork: true, dns: { policy: kplus.DnsPolicy.DEFAULT } } : {}),
    });
    this.workload.select(kplus.LabelSelector.of({ labels: role.selector }));

    // First, as a native sidecar (docs/architecture.md#the-holders-sidecar-is-a-native-sidecar).
    if (role.reconciler !== undefined) this.addReconciler(pool, role.reconciler);
    // With the sleeper there is nothing to copy: its ConfigMap is mounted before the sandbox starts.
    if (sleeper === undefined) this.addHelper(binVolume, props.helperImage ?? DEFAULT_HELPER_IMAGE);
    // A container that only makes the kubelet pull `image`.
    const addSleeper = (name: string, image: string, imagePullPolicy: kplus.ImagePullPolicy) =>
      this.workload.addContainer({
        name,
        image,
        imagePullPolicy,
        command: sleepCommand,
        securityContext: CONTAINER_SECURITY,
        resources: IMAGE_RESOURCES,
        volumeMounts: [mountBin],
      });
    const refreshing = role.reconciler !== undefined && refreshes(pool);
    for (const ref of role.images) addSleeper(imageContainerName(ref), ref.canonical, pullPolicy(ref, refreshing));

    if (props.sidecarImage !== undefined) {
      if (!role.early) throw new Error(`pool ${pool.namespace}/${pool.id}: only an early puller pulls the sidecar's image`);
      addSleeper(SIDECAR_IMAGE_CONTAINER, props.sidecarImage, kplus.ImagePullPolicy.IF_NOT_PRESENT);
    }

    patchPullDaemonSet(this.workload, {
      ...role.where,
      imagePullSecrets: pool.imagePullSecrets,
      ...(pool.settings.priorityClassName === undefined ? {} : { priorityClassName: pool.settings.priorityClassName }),
      maxUnavailable: pool.settings.maxUnavailable,
      ...(role.reconciler === undefined
        ? {}
        : { sidecar: SIDECAR_CONTAINER, sidecarStartupProbe: sidecarStartupProbe(deadlineSecondsOf(pool)) }),
    });

    // Checked as rendered, escape hatches included.
    addCheck(this, () => checkPoolObject(this.manifest(), pool));
  }

  /** The volume the sleep binary comes from: the sleeper's ConfigMap, or an emptyDir the helper fills. */
  private binVolume(sleeper: SleeperProps | undefined): kplus.Volume {
    return sleeper === undefined
      ? kplus.Volume.fromEmptyDir(this, 'bin', HELPER_VOLUME, { sizeLimit: Size.mebibytes(16) })
      : kplus.Volume.fromConfigMap(this, 'bin', kplus.ConfigMap.fromConfigMapName(this, 'sleeper-cm', sleeper.configMap), {
          name: HELPER_VOLUME,
          defaultMode: SLEEPER_MODE,
          items: { [sleeper.arch]: { path: SLEEPER_FILE, mode: SLEEPER_MODE } },
        });
  }

  private addHelper(binVolume: kplus.Volume, image: string): void {
    this.workload.addInitContainer({
      name: HELPER_CONTAINER,
      image,
      imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
      command: [...HELPER_COMMAND],
      securityContext: CONTAINER_SECURITY,
      resources: HELPER_RESOURCES,
      volumeMounts: [{ path: HELPER_MOUNT, volume: binVolume }],
    });
  }

  /** Memory its pod requests of a node, in bytes, as the scheduler counts it. */
  memoryRequest(): number {
    return podMemoryRequest(this.manifest().spec?.template?.spec ?? {});
  }

  private manifest(): Manifest {
    return ApiObject.of(this.workload).toJson() as Manifest;
  }

  private addReconciler(pool: Pool, reconciler: ReconcilerProps): void {
    const pools = kplus.Volume.fromConfigMap(this, 'pools', kplus.ConfigMap.fromConfigMapName(this, 'pools-cm', POOLS_CONFIGMAP), {
      name: POOLS_VOLUME,
    });
    const gate = pool.settings.gate;
    const metricsPort = reconciler.metricsPort ?? DEFAULTS.metricsPort;
    // Refresh reads credentials from mounted pull secrets (RBAC grants no Secrets); optional, as in the kubelet.
    const secretMounts = refreshes(pool)
      ? pool.imagePullSecrets.map((secretName) => ({
          path: `${PULL_SECRETS_MOUNT_PATH}/${secretName}`,
          readOnly: true,
          volume: kplus.Volume.fromSecret(
            this,
            `pull-secret-${secretName}`,
            kplus.Secret.fromSecretName(this, `secret-${secretName}`, secretName),
            {
              name: pullSecretVolumeName(secretName),
              optional: true,
            },
          ),
        }))
      : [];
    this.workload.addInitContainer({
      name: SIDECAR_CONTAINER,
      image: reconciler.image,
      imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
      securityContext: CONTAINER_SECURITY,
      resources: SIDECAR_RESOURCES,
      ports: [{ number: metricsPort, name: METRICS_PORT_NAME }],
      volumeMounts: [{ path: POOLS_MOUNT_PATH, volume: pools, readOnly: true }, ...secretMounts],
      envVariables: Object.fromEntries(
        renderSidecarEnv({
          poolId: this.poolId,
          nodeLabelKey: nodeLabelKey(this.poolId),
          nodeAnnotationKey: nodeAnnotationKey(this.poolId),
          gateTaintKey: gate?.taintKey ?? '',
          deadlineSeconds: deadlineSecondsOf(pool),
          refreshSeconds: refreshes(pool) ? pool.settings.refreshSeconds : 0,
          metricsPort,
        }).map((v) => [v.name, 'value' in v ? kplus.EnvValue.fromValue(v.value) : kplus.EnvValue.fromFieldRef(envFieldPath(v.fieldPath))]),
      ),
    });
  }
}

/** Whether the pool's sidecar refreshes moved tags; only then does it get pull secrets and image-patch rights. */
export function refreshes(pool: Pool): boolean {
  return pool.settings.refreshSeconds > 0 && pool.images.some((ref) => ref.digest === undefined);
}

/** The pool's deadline in seconds, as its sidecar and pools.json are told it: the gate's, or the default. */
export function deadlineSecondsOf(pool: Pool): number {
  return pool.settings.gate?.deadlineSeconds ?? DEFAULTS.deadlineSeconds;
}

/** Beyond the deadline, how long the kubelet lets the startup probe fail before it restarts the sidecar. */
const STARTUP_SLACK_SECONDS = 30;

/** Holds the image containers back until the sidecar releases them (docs/architecture.md). */
function sidecarStartupProbe(deadlineSeconds: number): HttpProbe {
  return {
    httpGet: { path: STARTUP_PATH, port: METRICS_PORT_NAME },
    periodSeconds: 1,
    timeoutSeconds: 1,
    failureThreshold: deadlineSeconds + STARTUP_SLACK_SECONDS,
  };
}

/** cdk8s-plus's downward API fields by their path. */
const ENV_FIELD_PATHS = new Map<string, kplus.EnvFieldPaths>(Object.values(kplus.EnvFieldPaths).map((p) => [p, p]));

/** The cdk8s-plus member for a downward API field path the contract names. */
function envFieldPath(path: string): kplus.EnvFieldPaths {
  const member = ENV_FIELD_PATHS.get(path);
  if (member === undefined) throw new Error(`cdk8s-plus has no downward API field ${path}`);
  return member;
}

/** `IfNotPresent`, so a restart never needs the registry; `Always` for refreshed tags. */
function pullPolicy(ref: ImageRef, refreshing: boolean): kplus.ImagePullPolicy {
  return refreshing && ref.digest === undefined ? kplus.ImagePullPolicy.ALWAYS : kplus.ImagePullPolicy.IF_NOT_PRESENT;
}
