/**
 * A NetworkPolicy for the sidecars of one namespace: holder pods accept connections only on the
 * metrics port, from the named scraper and node CIDRs. Pullers listen on nothing.
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
  /** Labels of the scraper's namespaces (a `namespaceSelector`). @default - the policy's own namespace */
  readonly scraperNamespaceLabels?: Readonly<Record<string, string>>;
  /** Labels of the scraper's pods (a `podSelector`). @default - every pod of `scraperNamespaceLabels` */
  readonly scraperPodLabels?: Readonly<Record<string, string>>;
  /** CIDRs of the nodes, for plugins that filter a node's own traffic to its pods. @default - none */
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
