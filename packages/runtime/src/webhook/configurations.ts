import { isNotFound, type KubeClient, type KubeObject, type ResourceType } from '@regulon/client';
import type { Operation } from './admission.ts';
import { CONVERSION_PATH } from './conversion.ts';

/**
 * What the API server does when it cannot reach the webhook (the manager is
 * down, a timeout): `Fail` refuses the request, `Ignore` lets it through
 * unchecked. Decided per webhook: see each app's webhook.ts for why.
 */
export type FailurePolicy = 'Fail' | 'Ignore';

export interface WebhookPolicy {
  failurePolicy: FailurePolicy;
  /** The operations sent to the webhook (default: CREATE and UPDATE). */
  operations?: Operation[] | undefined;
  /** How long the API server waits for an answer (default 10 s, the API server's own default). */
  timeoutSeconds?: number | undefined;
}

/** One webhook as the API server is told about it: everything a configuration entry needs. */
export interface WebhookDefinition extends Required<WebhookPolicy> {
  type: 'mutating' | 'validating';
  /** Fully qualified (`vdatabase.regulon.dev`): the name the API server quotes in its refusals. */
  name: string;
  path: string;
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** controller-runtime's paths: `/mutate-<group with dashes>-<version>-<kind>`, `/validate-…`. */
export function webhookPath(type: 'mutating' | 'validating', kind: ResourceType): string {
  const group = kind.group.replaceAll('.', '-') || 'core';
  return `/${type === 'mutating' ? 'mutate' : 'validate'}-${group}-${kind.version}-${kind.kind.toLowerCase()}`;
}

export function webhookDefinition(
  type: 'mutating' | 'validating',
  kind: ResourceType,
  policy: WebhookPolicy,
): WebhookDefinition {
  const prefix = type === 'mutating' ? 'm' : 'v';
  return {
    type,
    name: `${prefix}${kind.kind.toLowerCase()}.${kind.group || 'core.k8s.io'}`,
    path: webhookPath(type, kind),
    group: kind.group,
    version: kind.version,
    kind: kind.kind,
    plural: kind.plural,
    namespaced: kind.namespaced,
    failurePolicy: policy.failurePolicy,
    operations: policy.operations ?? ['CREATE', 'UPDATE'],
    timeoutSeconds: policy.timeoutSeconds ?? 10,
  };
}

/** How the API server reaches the webhooks: the Service in a cluster, a URL when the manager runs on the host. */
export type ClientConfig = { service: { namespace: string; name: string; port?: number } } | { url: string };

export interface ConfigurationNames {
  validating: string;
  mutating: string;
}

/** The default names of the two configurations (`<prefix>-validating`, `<prefix>-mutating`). */
export function configurationNames(prefix: string): ConfigurationNames {
  return { validating: `${prefix}-validating`, mutating: `${prefix}-mutating` };
}

/**
 * The ValidatingWebhookConfiguration and MutatingWebhookConfiguration for
 * `definitions` (either is left out when it would be empty). Without a
 * `caBundle` the manager injects it (ManagedCertificates) or cert-manager's
 * CA injector does; the manifests never carry one, so re-applying them with
 * server-side apply leaves the injected field (another manager's) alone, and
 * the manager re-injects it at its next check if anything removed it.
 * Only Regulon's own kinds are matched, so `Fail` can never block the
 * cluster's own workloads or the manager's Pods.
 */
export interface ConfigurationOptions {
  names: ConfigurationNames;
  clientConfig: ClientConfig;
  caBundle?: string | undefined;
  labels?: Record<string, string> | undefined;
  /** Only objects in these namespaces go through the webhooks (a manager that watches one namespace; a test). */
  namespaces?: readonly string[] | undefined;
}

export function webhookConfigurations(
  definitions: readonly WebhookDefinition[],
  opts: ConfigurationOptions,
): KubeObject[] {
  const entry = (d: WebhookDefinition) => ({
    name: d.name,
    admissionReviewVersions: ['v1'],
    sideEffects: 'None',
    failurePolicy: d.failurePolicy,
    matchPolicy: 'Equivalent',
    timeoutSeconds: d.timeoutSeconds,
    ...(opts.namespaces
      ? {
          namespaceSelector: {
            matchExpressions: [
              { key: 'kubernetes.io/metadata.name', operator: 'In', values: [...opts.namespaces] },
            ],
          },
        }
      : {}),
    clientConfig: clientConfigAt(opts.clientConfig, d.path, opts.caBundle),
    rules: [
      {
        apiGroups: [d.group],
        apiVersions: [d.version],
        operations: d.operations,
        resources: [d.plural],
        scope: d.namespaced ? 'Namespaced' : 'Cluster',
      },
    ],
  });
  const sorted = [...definitions].sort((a, b) => a.name.localeCompare(b.name));
  const configs: KubeObject[] = [];
  for (const [type, kind, name] of [
    ['mutating', 'MutatingWebhookConfiguration', opts.names.mutating],
    ['validating', 'ValidatingWebhookConfiguration', opts.names.validating],
  ] as const) {
    const webhooks = sorted.filter((d) => d.type === type).map(entry);
    if (!webhooks.length) continue;
    configs.push({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name, ...(opts.labels ? { labels: opts.labels } : {}) },
      webhooks,
    } as KubeObject);
  }
  return configs;
}

/** admissionregistration's and apiextensions' WebhookClientConfig: `clientConfig` at `path`. */
function clientConfigAt(config: ClientConfig, path: string, caBundle: string | undefined) {
  return {
    ...('url' in config
      ? { url: `${config.url.replace(/\/$/, '')}${path}` }
      : {
          service: {
            namespace: config.service.namespace,
            name: config.service.name,
            path,
            ...(config.service.port ? { port: config.service.port } : {}),
          },
        }),
    ...(caBundle ? { caBundle } : {}),
  };
}

/** A CRD's `spec.conversion` for a webhook conversion, as the API server is told about it. */
export interface CrdConversion {
  strategy: 'Webhook';
  webhook: {
    conversionReviewVersions: ['v1'];
    clientConfig: ReturnType<typeof clientConfigAt>;
  };
}

/**
 * The `spec.conversion` of a CRD whose versions the WebhookServer converts
 * (see WebhookServer.conversion): webhook conversion at CONVERSION_PATH, with
 * the only ConversionReview version it speaks. Without a `caBundle` the
 * manager injects it (ManagedCertificates) or cert-manager's CA injector
 * does; a manifest made with none leaves the injected field alone when
 * re-applied with server-side apply.
 */
export function crdConversion(clientConfig: ClientConfig, caBundle?: string): CrdConversion {
  return {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: clientConfigAt(clientConfig, CONVERSION_PATH, caBundle),
    },
  };
}

const CONFIGURATION_TYPES = {
  ValidatingWebhookConfiguration: Object.freeze({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
  }),
  MutatingWebhookConfiguration: Object.freeze({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    plural: 'mutatingwebhookconfigurations',
    namespaced: false,
  }),
} as const;

/**
 * Server-side applies the configurations of `definitions` (see
 * webhookConfigurations): what a manager on the host does, or a test, where
 * no deploy/ manifest names its URL. Without a `caBundle`, the field stays
 * whoever's it is (ManagedCertificates injects it).
 */
export async function applyWebhookConfigurations(
  client: KubeClient,
  definitions: readonly WebhookDefinition[],
  opts: ConfigurationOptions & { fieldManager?: string },
): Promise<void> {
  for (const config of webhookConfigurations(definitions, opts)) {
    const type = CONFIGURATION_TYPES[config.kind as keyof typeof CONFIGURATION_TYPES];
    await client
      .resource(type)
      .apply(config, { fieldManager: opts.fieldManager ?? 'regulon-webhooks', force: true });
  }
}

/** Deletes both configurations (either may be absent). */
export async function deleteWebhookConfigurations(
  client: KubeClient,
  names: ConfigurationNames,
): Promise<void> {
  for (const [type, name] of [
    [CONFIGURATION_TYPES.ValidatingWebhookConfiguration, names.validating],
    [CONFIGURATION_TYPES.MutatingWebhookConfiguration, names.mutating],
  ] as const) {
    await client
      .resource(type)
      .delete(name)
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
}
