/**
 * The cluster's fail-safe Deployment (docs/architecture.md, The fail-safe): one replica of the
 * reconciler image, only on nodes some pool marked warm or partial and with `IfNotPresent`, so it
 * starts during a registry outage; it tolerates no taint.
 */
import { Chart, type ChartProps } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { FAILSAFE_NAME } from '../contract/access-names.js';
import { FAILSAFE_CONTAINER, FAILSAFE_MODE, failsafeGraceError, renderFailsafeEnv } from '../contract/failsafe.js';
import { nodeLabelKey } from '../contract/identity.js';
import {
  LABEL_COMPONENT,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_PART_OF,
  MANAGED_BY,
  NodeState,
  POOLS_CONFIGMAP,
  POOLS_MOUNT_PATH,
} from '../contract/names.js';
import { POOLS_VOLUME } from './naming.js';
import { RUN_AS_GROUP, RUN_AS_USER } from './security.js';

/** Props of {@link Failsafe}. */
export interface FailsafeProps {
  /** The reconciler image, the one the sidecars run. */
  readonly image: string;
  /** Every pool id of the bundle: a node warm or partial for any of them holds the image. */
  readonly poolIds: readonly string[];
  /** Seconds past the longest deadline, from a node's creation, before the fail-safe acts. */
  readonly graceSeconds: number;
}

const LABELS = { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_NAME]: 'prewarm', [LABEL_PART_OF]: 'prewarm', [LABEL_COMPONENT]: 'failsafe' };
const SELECTOR = { [LABEL_NAME]: 'prewarm', [LABEL_COMPONENT]: 'failsafe' };

/** The fail-safe's Deployment, in the chart's namespace (whose pools.json it mounts). */
export class Failsafe extends Construct {
  constructor(scope: Construct, id: string, props: FailsafeProps) {
    super(scope, id);
    if (props.poolIds.length === 0) throw new Error('Failsafe: no pool, so no node holds the reconciler image');
    const invalid = failsafeGraceError(props.graceSeconds);
    if (invalid !== undefined) throw new Error(`Failsafe: graceSeconds ${invalid}, got ${props.graceSeconds}`);
    const namespace = (Chart.of(this) as Chart & Pick<ChartProps, 'namespace'>).namespace;
    new k8s.KubeDeployment(this, 'Resource', {
      metadata: { name: FAILSAFE_NAME, ...(namespace === undefined ? {} : { namespace }), labels: LABELS },
      spec: {
        replicas: 1,
        revisionHistoryLimit: 2,
        selector: { matchLabels: SELECTOR },
        template: { metadata: { labels: LABELS }, spec: podSpec(props) },
      },
    });
  }
}

function podSpec(props: FailsafeProps): k8s.PodSpec {
  const terms = [...props.poolIds]
    .sort()
    .map((id) => ({ matchExpressions: [{ key: nodeLabelKey(id), operator: 'In', values: [NodeState.Warm, NodeState.Partial] }] }));
  return {
    serviceAccountName: FAILSAFE_NAME,
    automountServiceAccountToken: true,
    enableServiceLinks: false,
    terminationGracePeriodSeconds: 5,
    securityContext: { runAsNonRoot: true, runAsUser: RUN_AS_USER, runAsGroup: RUN_AS_GROUP, seccompProfile: { type: 'RuntimeDefault' } },
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
    volumes: [{ name: POOLS_VOLUME, configMap: { name: POOLS_CONFIGMAP } }],
    containers: [
      {
        name: FAILSAFE_CONTAINER,
        image: props.image,
        imagePullPolicy: 'IfNotPresent',
        args: [FAILSAFE_MODE],
        env: renderFailsafeEnv(props.graceSeconds).map((v) =>
          'value' in v ? { name: v.name, value: v.value } : { name: v.name, valueFrom: { fieldRef: { fieldPath: v.fieldPath } } },
        ),
        terminationMessagePolicy: 'FallbackToLogsOnError',
        securityContext: {
          runAsNonRoot: true,
          runAsUser: RUN_AS_USER,
          runAsGroup: RUN_AS_GROUP,
          privileged: false,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        resources: {
          requests: { cpu: k8s.Quantity.fromString('5m'), memory: k8s.Quantity.fromString('48Mi') },
          limits: { cpu: k8s.Quantity.fromString('250m'), memory: k8s.Quantity.fromString('96Mi') },
        },
        volumeMounts: [{ name: POOLS_VOLUME, mountPath: POOLS_MOUNT_PATH, readOnly: true }],
      },
    ],
  };
}
