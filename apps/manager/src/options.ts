import { controllerOptions, defineOptions, managerOptions } from '@regulon/options';
import { CONTROLLERS } from './controllers.ts';

// The log level last, after the manager's own options, as --help has always listed it.
const { logLevel, ...standard } = managerOptions({ leaderElectionId: 'regulon-manager' });

export const OPTIONS = defineOptions({
  ...standard,
  webhookBindAddress: {
    flag: 'webhook-bind-address',
    env: 'REGULON_WEBHOOK_BIND_ADDRESS',
    type: 'string',
    default: '0',
    description:
      'Address of the webhook server: CRD conversions and admission (HTTPS; :9443 is the usual port); 0 serves none. deploy/ sets :9443',
  },
  webhookCertDir: {
    flag: 'webhook-cert-dir',
    env: 'REGULON_WEBHOOK_CERT_DIR',
    type: 'string',
    description:
      'Directory of a mounted serving certificate (tls.crt, tls.key; cert-manager style), reloaded when it changes. Default: the manager makes and rotates its own, kept in the Secret --webhook-secret-name',
  },
  webhookSecretName: {
    flag: 'webhook-secret-name',
    env: 'REGULON_WEBHOOK_SECRET_NAME',
    type: 'string',
    default: 'regulon-webhook-certs',
    description: "Secret in the manager's namespace holding the CA and serving certificate the manager makes",
  },
  webhookServiceName: {
    flag: 'webhook-service-name',
    env: 'REGULON_WEBHOOK_SERVICE_NAME',
    type: 'string',
    default: 'regulon-webhook',
    description:
      'Service the API server calls the webhooks through: its DNS names go in the certificate (outside a cluster, 127.0.0.1 too)',
  },
  webhookUrl: {
    flag: 'webhook-url',
    env: 'REGULON_WEBHOOK_URL',
    type: 'string',
    description:
      'Outside a cluster: the base URL the API server calls the webhooks at (https://127.0.0.1:9443); the manager then applies the webhook configurations itself, naming it',
  },
  webhookConfigurationPrefix: {
    flag: 'webhook-configuration-prefix',
    env: 'REGULON_WEBHOOK_CONFIGURATION_PREFIX',
    type: 'string',
    default: 'regulon',
    description:
      'The manager injects its CA into the webhook configurations <prefix>-validating and <prefix>-mutating',
  },
  imageCatalog: {
    flag: 'image-catalog',
    env: 'REGULON_IMAGE_CATALOG',
    type: 'string',
    description:
      "Image catalog file: which image runs which engine version (default: each engine's official images; see @regulon/image-catalog)",
  },
  instanceAgentImage: {
    flag: 'instance-agent-image',
    env: 'REGULON_INSTANCE_AGENT_IMAGE',
    type: 'string',
    description:
      "The manager's own image, which the instance agent is copied from, or `self` to read it from the manager's Pod (POD_NAME): postgres, mariadb and replicated redis Pods then run under the agent, which holds each Database's or Cache's primary Lease, and a promotion waits for the Lease instead of the old primary's Pod object (default: no agent)",
  },
  logLevel,
  ...controllerOptions(CONTROLLERS.map((c) => c.name)),
});
