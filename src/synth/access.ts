/**
 * Least-privilege access of the reconciler sidecar: ServiceAccounts, RBAC for exactly the calls it
 * makes, and ValidatingAdmissionPolicies for what RBAC cannot express (its own node, prewarm's
 * keys, gate taints; its own pod's image digests). See docs/architecture.md (Access).
 */
import { ApiObject, Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import {
  DEFAULT_GATE_TAINT_KEY,
  EVENTS_NAMESPACE,
  LABEL_COMPONENT,
  LABEL_MANAGED_BY,
  LABEL_NAME,
  LABEL_PART_OF,
  LABEL_POOL,
  MANAGED_BY,
  NODE_ANNOTATION_PREFIX,
  NODE_LABEL_PREFIX,
} from '../contract/names.js';
import { isKubernetesNodeTaint, isQualifiedKey } from '../contract/gate-key.js';
import { ACCESS_NAMES, FAILSAFE_ACCESS_NAMES, FAILSAFE_NAME, SERVICE_ACCOUNT } from '../contract/access-names.js';

/** Extra key the apiserver puts into pod-bound ServiceAccount tokens' user info. */
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';
/** The pod's name, which the apiserver puts beside {@link NODE_NAME_EXTRA}. */
export const POD_NAME_EXTRA = 'authentication.kubernetes.io/pod-name';

/** Props of {@link ReconcilerAccess}. */
export interface ReconcilerAccessProps {
  /** Namespaces running pull DaemonSets; each gets a ServiceAccount and a RoleBinding. */
  readonly namespaces: readonly string[];
  /** ServiceAccount of the pull pods in every namespace. @default SERVICE_ACCOUNT ('prewarm-reconciler') */
  readonly serviceAccountName?: string;
  /** Taint keys the sidecars may remove. @default [DEFAULT_GATE_TAINT_KEY] */
  readonly gateTaintKeys?: readonly string[];
  /** Emit the ServiceAccounts. Turn off when another construct already does. @default true */
  readonly createServiceAccounts?: boolean;
  /** Deny node writes whose token lacks the node-name claim (Kubernetes < 1.30 default). @default true */
  readonly requireNodeClaim?: boolean;
  /** Namespaces whose sidecars refresh moved tags: they may set their own pod's image to a digest. @default - none */
  readonly refreshNamespaces?: readonly string[];
  /** The namespace of the cluster's fail-safe, which may only remove gating taints. @default - no fail-safe */
  readonly failsafeNamespace?: string;
}

const LABELS = {
  [LABEL_MANAGED_BY]: MANAGED_BY,
  [LABEL_NAME]: 'prewarm',
  [LABEL_PART_OF]: 'prewarm',
  [LABEL_COMPONENT]: 'reconciler',
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const sorted = (xs: readonly string[]): string[] => [...new Set(xs)].sort();
/** A CEL string literal (single-quoted, escaped). */
export const celString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** A CEL list of string literals. */
export const celList = (xs: readonly string[]): string => `[${xs.map(celString).join(', ')}]`;

/** "field unchanged, or absent on both sides" for an optional field of `path`. */
function unchanged(path: string, field: string): string {
  return `has(object.${path}.${field}) == has(oldObject.${path}.${field}) && (!has(object.${path}.${field}) || object.${path}.${field} == oldObject.${path}.${field})`;
}

/** The values of `key` in the request's user info extra, or an empty list. */
function extraOf(key: string): string {
  return `has(request.userInfo.extra) && ${celString(key)} in request.userInfo.extra ? request.userInfo.extra[${celString(key)}] : []`;
}

/** A digest reference: what a refreshing sidecar may set an image to. */
const DIGEST_REF = '^[^@]+@sha256:[0-9a-f]{64}$';

/**
 * What a sidecar may change on a pod: only images of its own holder pod's containers, each to the
 * same reference with another digest. The pod-name claim never depends on `requireNodeClaim`.
 */
function refreshValidations(
  requireNodeClaim: boolean,
): { expression: string; message?: string; messageExpression?: string; reason: string }[] {
  const base = (image: string): string => `${image}.split('@')[0]`;
  const ownPod = 'variables.tokenPod.size() == 1 && variables.tokenPod[0] == object.metadata.name';
  const ownNode = 'variables.tokenNode.size() == 1 && has(object.spec.nodeName) && variables.tokenNode[0] == object.spec.nodeName';
  return [
    {
      expression: requireNodeClaim ? `${ownNode} && ${ownPod}` : ownPod,
      messageExpression: `'the prewarm reconciler may only change its own pod (token pod: ' + (variables.tokenPod.size() == 0 ? '<none>' : variables.tokenPod[0]) + ', target: ' + object.metadata.name + ')'`,
      reason: 'Forbidden',
    },
    {
      expression: `has(oldObject.metadata.labels) && ${celString(LABEL_POOL)} in oldObject.metadata.labels`,
      message: `the prewarm reconciler may only change a pool's holder pod (labelled ${LABEL_POOL})`,
      reason: 'Forbidden',
    },
    {
      expression: ['labels', 'annotations', 'finalizers', 'ownerReferences'].map((f) => `(${unchanged('metadata', f)})`).join(' && '),
      message: "the prewarm reconciler may not change a pod's labels, annotations, finalizers or owner references",
      reason: 'Forbidden',
    },
    {
      expression: [
        'initContainers',
        'ephemeralContainers',
        'activeDeadlineSeconds',
        'tolerations',
        'terminationGracePeriodSeconds',
        'schedulingGates',
      ]
        .map((f) => `(${unchanged('spec', f)})`)
        .join(' && '),
      message: "the prewarm reconciler may change only the images of a pod's containers",
      reason: 'Forbidden',
    },
    {
      expression:
        'object.spec.containers.size() == oldObject.spec.containers.size() && ' +
        'object.spec.containers.all(c, oldObject.spec.containers.exists(o, o.name == c.name && ' +
        `(o.image == c.image || (c.image.matches(${celString(DIGEST_REF)}) && ${base('c.image')} == ${base('o.image')}))))`,
      message: "the prewarm reconciler may only add or replace the digest of a container's image, keeping its repository and tag",
      reason: 'Forbidden',
    },
  ];
}

/** What a sidecar (or the fail-safe) may change on a node: its own node's prewarm labels, annotations and gating taints. */
function nodeValidations(
  taintKeys: readonly string[],
  requireNodeClaim: boolean,
  failsafeUser: string | undefined,
): { expression: string; message?: string; messageExpression?: string; reason: string }[] {
  const L = celString(NODE_LABEL_PREFIX);
  const A = celString(NODE_ANNOTATION_PREFIX);
  const claim = 'variables.tokenNode.size() == 1 && variables.tokenNode[0] == object.metadata.name';
  return [
    ...(requireNodeClaim
      ? [
          {
            // The fail-safe acts on nodes where no sidecar runs, so never on its own.
            expression: failsafeUser === undefined ? claim : `variables.failsafe || (${claim})`,
            messageExpression: `'the prewarm reconciler may only write the node its pod runs on (token node: ' + (variables.tokenNode.size() == 0 ? '<none>' : variables.tokenNode[0]) + ', target: ' + object.metadata.name + ')'`,
            reason: 'Forbidden',
          },
        ]
      : []),
    {
      expression:
        `variables.newLabels.all(k, k.startsWith(${L}) || (k in variables.oldLabels && variables.oldLabels[k] == variables.newLabels[k])) && ` +
        `variables.oldLabels.all(k, k.startsWith(${L}) || k in variables.newLabels)`,
      message: `the prewarm reconciler may only change node labels under ${NODE_LABEL_PREFIX}`,
      reason: 'Forbidden',
    },
    {
      expression:
        `variables.newAnnotations.all(k, k.startsWith(${A}) || (k in variables.oldAnnotations && variables.oldAnnotations[k] == variables.newAnnotations[k])) && ` +
        `variables.oldAnnotations.all(k, k.startsWith(${A}) || k in variables.newAnnotations)`,
      message: `the prewarm reconciler may only change node annotations under ${NODE_ANNOTATION_PREFIX}`,
      reason: 'Forbidden',
    },
    ...(failsafeUser === undefined
      ? []
      : [
          {
            expression:
              '!variables.failsafe || (variables.newLabels == variables.oldLabels && variables.newAnnotations == variables.oldAnnotations)',
            message: 'the prewarm fail-safe may only remove the gating taints: no node label or annotation',
            reason: 'Forbidden',
          },
        ]),
    {
      expression:
        `variables.newTaints.all(t, variables.oldTaints.exists(o, o == t)) && ` +
        `variables.oldTaints.all(o, o.key in ${celList(taintKeys)} || variables.newTaints.exists(t, t == o))`,
      message: `the prewarm reconciler may only remove the gating taints ${taintKeys.join(', ')}`,
      reason: 'Forbidden',
    },
    {
      expression: ['podCIDR', 'podCIDRs', 'providerID', 'unschedulable', 'configSource', 'externalID']
        .map((f) => `(${unchanged('spec', f)})`)
        .join(' && '),
      message: 'the prewarm reconciler may not change the node spec besides removing gating taints',
      reason: 'Forbidden',
    },
    {
      expression: ['finalizers', 'ownerReferences'].map((f) => `(${unchanged('metadata', f)})`).join(' && '),
      message: 'the prewarm reconciler may not change node finalizers or owner references',
      reason: 'Forbidden',
    },
  ];
}

/** The sidecar's ServiceAccounts, RBAC and node-write admission policy. */
export class ReconcilerAccess extends Construct {
  /** ServiceAccount name used in every namespace. */
  readonly serviceAccountName: string;
  private readonly namespaces: string[];
  private readonly taintKeys: string[];

  constructor(scope: Construct, id: string, props: ReconcilerAccessProps) {
    super(scope, id);
    this.serviceAccountName = props.serviceAccountName ?? SERVICE_ACCOUNT;
    this.namespaces = sorted(props.namespaces);
    this.taintKeys = sorted(props.gateTaintKeys ?? [DEFAULT_GATE_TAINT_KEY]);
    const requireNodeClaim = props.requireNodeClaim ?? true;
    this.checkProps();
    this.node.addValidation({
      validate: () => {
        const ns = Chart.of(this).namespace;
        return ns
          ? [`ReconcilerAccess must be placed in a chart without a namespace (found "${ns}"): it emits cluster-scoped objects`]
          : [];
      },
    });

    if (props.createServiceAccounts ?? true) this.serviceAccounts();
    this.sidecarRbac();

    const refreshNamespaces = sorted(props.refreshNamespaces ?? []);
    for (const ns of refreshNamespaces)
      if (!this.namespaces.includes(ns)) throw new Error(`ReconcilerAccess: refresh namespace "${ns}" is not one of namespaces`);
    if (refreshNamespaces.length > 0) this.refreshAccess(refreshNamespaces, requireNodeClaim);

    const failsafeUser = props.failsafeNamespace === undefined ? undefined : this.addFailsafe(props.failsafeNamespace);
    this.nodePolicy(requireNodeClaim, failsafeUser);
  }

  /** Refuses namespaces, a ServiceAccount name or gate taint keys no cluster would accept. */
  private checkProps(): void {
    if (this.namespaces.length === 0) throw new Error('ReconcilerAccess: namespaces must not be empty');
    for (const ns of this.namespaces) {
      if (ns.length > 63 || !DNS_LABEL.test(ns)) throw new Error(`ReconcilerAccess: namespace "${ns}" is not a valid DNS label`);
    }
    if (this.serviceAccountName.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(this.serviceAccountName)) {
      throw new Error(`ReconcilerAccess: serviceAccountName "${this.serviceAccountName}" is not a valid DNS subdomain`);
    }
    if (this.taintKeys.length === 0) throw new Error('ReconcilerAccess: gateTaintKeys must not be empty');
    for (const k of this.taintKeys) {
      if (!isQualifiedKey(k)) throw new Error(`ReconcilerAccess: gate taint key "${k}" is not a valid qualified name`);
      // Which keys a bundle may gate on is a model check (checkGateKeys); here only never-removable taints.
      if (isKubernetesNodeTaint(k)) throw new Error(`ReconcilerAccess: gate taint key "${k}" is a taint Kubernetes itself sets and lifts`);
    }
  }

  /** One ServiceAccount per namespace, without a mounted token. */
  private serviceAccounts(): void {
    for (const namespace of this.namespaces) {
      new k8s.KubeServiceAccount(this, `sa-${namespace}`, {
        metadata: { name: this.serviceAccountName, namespace, labels: LABELS },
        // The pull pod projects its own pod-bound token into the sidecar only.
        automountServiceAccountToken: false,
      });
    }
  }

  /** The sidecar's roles: patch nodes, read pods in its namespaces, create Events. */
  private sidecarRbac(): void {
    const subjects = this.namespaces.map((namespace) => ({ kind: 'ServiceAccount', name: this.serviceAccountName, namespace }));
    new k8s.KubeClusterRole(this, 'nodes-role', {
      metadata: { name: ACCESS_NAMES.nodesRole, labels: LABELS },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get', 'patch'] }],
    });
    new k8s.KubeClusterRoleBinding(this, 'nodes-binding', {
      metadata: { name: ACCESS_NAMES.nodesRole, labels: LABELS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACCESS_NAMES.nodesRole },
      subjects,
    });
    new k8s.KubeClusterRole(this, 'pods-role', {
      metadata: { name: ACCESS_NAMES.podsRole, labels: LABELS },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
    });
    for (const namespace of this.namespaces) {
      new k8s.KubeRoleBinding(this, `binding-${namespace}`, {
        metadata: { name: ACCESS_NAMES.roleBinding, namespace, labels: LABELS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACCESS_NAMES.podsRole },
        subjects: [{ kind: 'ServiceAccount', name: this.serviceAccountName, namespace }],
      });
    }
    new k8s.KubeClusterRole(this, 'events-role', {
      metadata: { name: ACCESS_NAMES.eventsRole, labels: LABELS },
      rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }],
    });
    new k8s.KubeRoleBinding(this, 'events-binding', {
      metadata: { name: ACCESS_NAMES.eventsBinding, namespace: EVENTS_NAMESPACE, labels: LABELS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACCESS_NAMES.eventsRole },
      subjects,
    });
  }

  /** The admission policy on node writes by the sidecars (and the fail-safe, when there is one). */
  private nodePolicy(requireNodeClaim: boolean, failsafeUser: string | undefined): void {
    const usernames = [
      ...this.namespaces.map((ns) => `system:serviceaccount:${ns}:${this.serviceAccountName}`),
      ...(failsafeUser === undefined ? [] : [failsafeUser]),
    ];
    const validations = nodeValidations(this.taintKeys, requireNodeClaim, failsafeUser);

    new ApiObject(this, 'policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: ACCESS_NAMES.policy, labels: LABELS },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['nodes'] }],
        },
        // Only the sidecars' and the fail-safe's own requests are judged.
        matchConditions: [{ name: 'prewarm-reconciler', expression: `request.userInfo.username in ${celList(usernames)}` }],
        variables: [
          {
            name: 'tokenNode',
            expression: `has(request.userInfo.extra) && ${celString(NODE_NAME_EXTRA)} in request.userInfo.extra ? request.userInfo.extra[${celString(NODE_NAME_EXTRA)}] : []`,
          },
          ...(failsafeUser === undefined
            ? []
            : [{ name: 'failsafe', expression: `request.userInfo.username == ${celString(failsafeUser)}` }]),
          { name: 'oldLabels', expression: 'has(oldObject.metadata.labels) ? oldObject.metadata.labels : {}' },
          { name: 'newLabels', expression: 'has(object.metadata.labels) ? object.metadata.labels : {}' },
          { name: 'oldAnnotations', expression: 'has(oldObject.metadata.annotations) ? oldObject.metadata.annotations : {}' },
          { name: 'newAnnotations', expression: 'has(object.metadata.annotations) ? object.metadata.annotations : {}' },
          { name: 'oldTaints', expression: 'has(oldObject.spec.taints) ? oldObject.spec.taints : []' },
          { name: 'newTaints', expression: 'has(object.spec.taints) ? object.spec.taints : []' },
        ],
        validations,
      },
    });
    new ApiObject(this, 'policy-binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: ACCESS_NAMES.policy, labels: LABELS },
      spec: { policyName: ACCESS_NAMES.policy, validationActions: ['Deny'] },
    });
  }

  /** `patch pods` where pools refresh, and the policy that admits only a digest on an image. */
  private refreshAccess(namespaces: readonly string[], requireNodeClaim: boolean): void {
    new k8s.KubeClusterRole(this, 'refresh-role', {
      metadata: { name: ACCESS_NAMES.refreshRole, labels: LABELS },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['patch'] }],
    });
    for (const namespace of namespaces) {
      new k8s.KubeRoleBinding(this, `refresh-binding-${namespace}`, {
        metadata: { name: ACCESS_NAMES.refreshRole, namespace, labels: LABELS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: ACCESS_NAMES.refreshRole },
        subjects: [{ kind: 'ServiceAccount', name: this.serviceAccountName, namespace }],
      });
    }
    const usernames = namespaces.map((ns) => `system:serviceaccount:${ns}:${this.serviceAccountName}`);
    new ApiObject(this, 'refresh-policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: ACCESS_NAMES.refreshPolicy, labels: LABELS },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['pods'] }],
        },
        matchConditions: [{ name: 'prewarm-reconciler', expression: `request.userInfo.username in ${celList(usernames)}` }],
        variables: [
          { name: 'tokenNode', expression: extraOf(NODE_NAME_EXTRA) },
          { name: 'tokenPod', expression: extraOf(POD_NAME_EXTRA) },
        ],
        validations: refreshValidations(requireNodeClaim),
      },
    });
    new ApiObject(this, 'refresh-policy-binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: ACCESS_NAMES.refreshPolicy, labels: LABELS },
      spec: { policyName: ACCESS_NAMES.refreshPolicy, validationActions: ['Deny'] },
    });
  }

  /** The fail-safe's ServiceAccount and RBAC; returns its user name, which the policy judges. */
  private addFailsafe(namespace: string): string {
    if (!this.namespaces.includes(namespace))
      throw new Error(`ReconcilerAccess: the fail-safe's namespace "${namespace}" holds no pool, so it has no pools.json to read`);
    const labels = { ...LABELS, [LABEL_COMPONENT]: 'failsafe' };
    const subject = { kind: 'ServiceAccount', name: FAILSAFE_NAME, namespace };
    const roleRef = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
    // Its pod mounts a token of its own (automount on the pod); the ServiceAccount grants none by default.
    new k8s.KubeServiceAccount(this, 'failsafe-sa', {
      metadata: { name: FAILSAFE_NAME, namespace, labels },
      automountServiceAccountToken: false,
    });
    new k8s.KubeClusterRole(this, 'failsafe-nodes-role', {
      metadata: { name: FAILSAFE_ACCESS_NAMES.nodesRole, labels },
      rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['list', 'patch'] }],
    });
    new k8s.KubeClusterRoleBinding(this, 'failsafe-nodes-binding', {
      metadata: { name: FAILSAFE_ACCESS_NAMES.nodesRole, labels },
      roleRef: roleRef(FAILSAFE_ACCESS_NAMES.nodesRole),
      subjects: [subject],
    });
    new k8s.KubeClusterRole(this, 'failsafe-pods-role', {
      metadata: { name: FAILSAFE_ACCESS_NAMES.podsRole, labels },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
    });
    for (const ns of this.namespaces) {
      new k8s.KubeRoleBinding(this, `failsafe-binding-${ns}`, {
        metadata: { name: FAILSAFE_ACCESS_NAMES.roleBinding, namespace: ns, labels },
        roleRef: roleRef(FAILSAFE_ACCESS_NAMES.podsRole),
        subjects: [subject],
      });
    }
    new k8s.KubeClusterRole(this, 'failsafe-events-role', {
      metadata: { name: FAILSAFE_ACCESS_NAMES.eventsRole, labels },
      rules: [{ apiGroups: [''], resources: ['events'], verbs: ['create'] }],
    });
    new k8s.KubeRoleBinding(this, 'failsafe-events-binding', {
      metadata: { name: FAILSAFE_ACCESS_NAMES.eventsBinding, namespace: EVENTS_NAMESPACE, labels },
      roleRef: roleRef(FAILSAFE_ACCESS_NAMES.eventsRole),
      subjects: [subject],
    });
    return `system:serviceaccount:${namespace}:${FAILSAFE_NAME}`;
  }
}
