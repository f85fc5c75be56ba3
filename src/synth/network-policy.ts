/**
 * A NetworkPolicy (`networking.k8s.io/v1`) for the sidecars of one namespace: the holder pods,
 * which alone run the sidecar, accept connections only to the metrics port, and there only from
 * the scraper the invocation names and from the node CIDRs it lists. The kubelet's startup probe
 * needs no rule where the network plugin follows the API's documented semantics (traffic from the
 * node a pod runs on is always allowed); `nodeCidrs` admits it where a plugin does not. Pullers
 * listen on nothing and are left unselected.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_NAME, LABEL_PART_OF, MANAGED_BY } from '../contract/names.js';
import { COMPONENT, Role } from '../contract/roles.js';
import { METRICS_PORT_NAME, NETWORK_POLICY } from './naming.js';

/** API version and kind of the emitted object. */
export const NETWORK_POLICY_TYPE = { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' } as const;

/** Who may reach the sidecars' metrics port besides the node itself. */
export interface ReconcilerNetworkPolicyProps {
  /**
   * Labels of the namespaces the scraper runs in (a `namespaceSelector`), e.g.
   * `kubernetes.io/metadata.name: monitoring`.
   * @default - with `scraperPodLabels`: the policy's own namespace; without: no scraper
   */
  readonly scraperNamespaceLabels?: Readonly<Record<string, string>>;
  /**
   * Labels of the scraper's pods (a `podSelector`), e.g. `app.kubernetes.io/name: prometheus`.
   * @default - with `scraperNamespaceLabels`: every pod of those namespaces; without: no scraper
   */
  readonly scraperPodLabels?: Readonly<Record<string, string>>;
  /**
   * CIDRs of the nodes, for network plugins that filter the node's own traffic to its pods (the
   * kubelet's probes) or a scraper on the host network.
   * @default - none
   */
  readonly nodeCidrs?: readonly string[];
}

const nonEmpty = (m: Readonly<Record<string, string>> | undefined): m is Readonly<Record<string, string>> =>
  m !== undefined && Object.keys(m).length > 0;

/** The NetworkPolicy of the sidecars of the chart's namespace. */
export class ReconcilerNetworkPolicy extends Construct {
  constructor(scope: Construct, id: string, props: ReconcilerNetworkPolicyProps = {}) {
    super(scope, id);
    const from: object[] = [];
    const ns = props.scraperNamespaceLabels;
    const pods = props.scraperPodLabels;
    if (nonEmpty(ns) || nonEmpty(pods))
      from.push({
        ...(nonEmpty(ns) ? { namespaceSelector: { matchLabels: { ...ns } } } : {}),
        ...(nonEmpty(pods) ? { podSelector: { matchLabels: { ...pods } } } : {}),
      });
    for (const cidr of [...new Set(props.nodeCidrs ?? [])].sort()) from.push({ ipBlock: { cidr } });
    new ApiObject(this, 'Resource', {
      ...NETWORK_POLICY_TYPE,
      metadata: {
        name: NETWORK_POLICY,
        labels: {
          [LABEL_MANAGED_BY]: MANAGED_BY,
          [LABEL_NAME]: 'prewarm',
          [LABEL_PART_OF]: 'prewarm',
          [LABEL_COMPONENT]: 'reconciler',
        },
      },
      spec: {
        podSelector: { matchLabels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_COMPONENT]: COMPONENT[Role.Holder] } },
        policyTypes: ['Ingress'],
        // No rule at all: every connection is refused but the node's own.
        ...(from.length === 0 ? {} : { ingress: [{ from, ports: [{ protocol: 'TCP', port: METRICS_PORT_NAME }] }] }),
      },
    });
  }
}
