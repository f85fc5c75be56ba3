/** A Prometheus Operator PodMonitor for the holder pods' sidecars of one namespace; the node label comes from the scrape target. */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_NAME, LABEL_PART_OF, MANAGED_BY, METRICS_PATH } from '../contract/names.js';
import { COMPONENT, Role } from '../contract/roles.js';
import { METRICS_PORT_NAME, POD_MONITOR } from './naming.js';

/** API version and kind of the emitted object. */
export const POD_MONITOR_TYPE = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor' } as const;

/** The label the PodMonitor adds to every series: the node the scraped sidecar runs on. */
export const NODE_TARGET_LABEL = 'node';

/** Props of {@link ReconcilerPodMonitor}. */
export interface ReconcilerPodMonitorProps {
  /** Labels a Prometheus's `podMonitorSelector` matches on, added to the PodMonitor's own. @default - none */
  readonly labels?: Readonly<Record<string, string>>;
  /** Scrape interval, as Prometheus writes durations. @default - the Prometheus's own scrape interval */
  readonly interval?: string;
}

/** The PodMonitor of the sidecars of the chart's namespace. */
export class ReconcilerPodMonitor extends Construct {
  constructor(scope: Construct, id: string, props: ReconcilerPodMonitorProps = {}) {
    super(scope, id);
    new ApiObject(this, 'Resource', {
      ...POD_MONITOR_TYPE,
      metadata: {
        name: POD_MONITOR,
        labels: {
          ...props.labels,
          [LABEL_MANAGED_BY]: MANAGED_BY,
          [LABEL_NAME]: 'prewarm',
          [LABEL_PART_OF]: 'prewarm',
          [LABEL_COMPONENT]: 'reconciler',
        },
      },
      spec: {
        // Holders only: they alone run the sidecar. No namespaceSelector: a PodMonitor's own
        // namespace is the default, and the one that holds the pool's pods.
        selector: { matchLabels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_COMPONENT]: COMPONENT[Role.Holder] } },
        podMetricsEndpoints: [
          {
            port: METRICS_PORT_NAME,
            path: METRICS_PATH,
            ...(props.interval === undefined ? {} : { interval: props.interval }),
            relabelings: [{ action: 'replace', sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: NODE_TARGET_LABEL }],
          },
        ],
      },
    });
  }
}
