import { X509Certificate, createPrivateKey } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { V1CustomResourceDefinition, V1PolicyRule, V1Secret } from '@kubernetes/client-node';
import {
  Kinds,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isNotFound,
  type KubeClient,
  type KubeObject,
  type ResourceType,
} from '@regulon/client';
import { silentLogger, type Logger } from '@regulon/util';
import {
  coversExactly,
  generateCA,
  generateServingCert,
  isSignedPair,
  msUntilExpiry,
  parseBundle,
  type KeyPair,
  type ServingNames,
} from './generate.ts';

/** What the server serves that must trust its certificate, besides the webhook configurations. */
export interface ServedWebhooks {
  /** CustomResourceDefinitions whose conversion webhook the server is (WebhookServer.conversions()). */
  conversionCRDs: readonly string[];
  /**
   * The admission types the server has webhooks of. A configuration of a type
   * it serves none of is left alone (undefined: both are injected): the
   * deployment need not have it, nor grant access to it.
   */
  admission?: ReadonlyArray<'validating' | 'mutating'> | undefined;
}

/**
 * Where the webhook server's certificate comes from. `start` resolves with the
 * first pair once there is one, then keeps it fresh until `signal` aborts,
 * handing each new pair to `onChange` (the server swaps it in for new
 * connections; open ones finish with the old). `served` says what the server
 * serves, for a source that injects its CA bundle.
 */
export interface CertificateSource {
  start(signal: AbortSignal, onChange: (pair: KeyPair) => void, served?: ServedWebhooks): Promise<KeyPair>;
}

/** A certificate and key that do not belong together, or don't parse: refused, the previous pair stays. */
function checkPair(pair: KeyPair): void {
  const cert = new X509Certificate(pair.cert);
  if (!cert.checkPrivateKey(createPrivateKey(pair.key)))
    throw new Error('the certificate does not match the private key');
}

export interface FileCertificatesOptions {
  /** Directory of the mounted certificate (a cert-manager Secret's volume). */
  certDir: string;
  certName?: string | undefined;
  keyName?: string | undefined;
  /** How often the files are read again besides on change notifications (default 10 s, as controller-runtime's certwatcher). */
  pollIntervalMs?: number | undefined;
  logger?: Logger | undefined;
}

/**
 * A mounted certificate (cert-manager style), reloaded when its files change,
 * without a restart. The kubelet updates a Secret volume by swapping a
 * symlink, which a watch on the directory sees; the poll catches what a watch
 * misses (some filesystems notify nothing). A half-written pair (certificate
 * of the new, key of the old) fails the match check and is tried again on the
 * next change, the previous pair serving meanwhile. It injects no CA bundle:
 * cert-manager's CA injector does, into the webhook configurations and CRDs
 * annotated `cert-manager.io/inject-ca-from`.
 */
export class FileCertificates implements CertificateSource {
  readonly #o: FileCertificatesOptions;
  readonly #log: Logger;

  constructor(options: FileCertificatesOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger;
  }

  async #read(): Promise<KeyPair> {
    const dir = this.#o.certDir;
    const [cert, key] = await Promise.all([
      readFile(join(dir, this.#o.certName ?? 'tls.crt'), 'utf8'),
      readFile(join(dir, this.#o.keyName ?? 'tls.key'), 'utf8'),
    ]);
    const pair = { cert, key };
    checkPair(pair);
    return pair;
  }

  async start(signal: AbortSignal, onChange: (pair: KeyPair) => void): Promise<KeyPair> {
    let current = await this.#read();
    let reading = false;
    const reload = async () => {
      if (reading || signal.aborted) return;
      reading = true;
      try {
        const next = await this.#read();
        if (next.cert !== current.cert || next.key !== current.key) {
          current = next;
          this.#log.info({ certDir: this.#o.certDir }, 'webhook certificate reloaded from its files');
          onChange(next);
        }
      } catch (err) {
        this.#log.warn(
          { err, certDir: this.#o.certDir },
          'webhook certificate files unreadable; keeping the previous one',
        );
      } finally {
        reading = false;
      }
    };
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(this.#o.certDir, { persistent: false }, () => void reload());
      watcher.on('error', () => undefined);
    } catch {
      // No watch on this filesystem: the poll alone reloads.
    }
    const poll = setInterval(() => void reload(), this.#o.pollIntervalMs ?? 10_000);
    poll.unref();
    signal.addEventListener(
      'abort',
      () => {
        clearInterval(poll);
        watcher?.close();
      },
      { once: true },
    );
    return current;
  }
}

const WEBHOOK_CONFIGURATION_GROUP = 'admissionregistration.k8s.io';
interface WebhookConfiguration extends KubeObject {
  webhooks?: Array<{ name: string; clientConfig?: { caBundle?: string } }> | undefined;
}
export const ValidatingWebhookConfigurations: ResourceType<WebhookConfiguration> = Object.freeze({
  group: WEBHOOK_CONFIGURATION_GROUP,
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
});
export const MutatingWebhookConfigurations: ResourceType<WebhookConfiguration> = Object.freeze({
  group: WEBHOOK_CONFIGURATION_GROUP,
  version: 'v1',
  kind: 'MutatingWebhookConfiguration',
  plural: 'mutatingwebhookconfigurations',
  namespaced: false,
});

/** Secret keys, as cert-manager's and kubernetes.io/tls Secrets name them. */
const CA_CERT = 'ca.crt';
const CA_KEY = 'ca.key';
const TLS_CERT = 'tls.crt';
const TLS_KEY = 'tls.key';
/** When the current CA entered the bundle: a serving certificate it signed is served only some checks later. */
const CA_SINCE_ANNOTATION = 'regulon.dev/ca-since';

const YEAR_MS = 365 * 24 * 3600_000;
export const DEFAULT_CA_VALIDITY_MS = 10 * YEAR_MS;
export const DEFAULT_CERT_VALIDITY_MS = YEAR_MS;
/** cert-controller's lookahead: a certificate is replaced this long before it expires. */
export const DEFAULT_ROTATE_BEFORE_MS = 90 * 24 * 3600_000;
export const DEFAULT_CERT_CHECK_INTERVAL_MS = 60_000;

export interface ManagedCertificatesOptions {
  client: KubeClient;
  /** Where the Secret lives: the manager's own namespace. */
  namespace: string;
  secretName: string;
  /** Names the serving certificate carries: the Service's DNS names, and 127.0.0.1 when the API server dials the host. */
  names: ServingNames;
  /**
   * Webhook configurations whose every webhook gets the CA bundle. (The CRDs
   * whose conversions the server serves get it too: the server names them.)
   */
  validatingConfiguration?: string | undefined;
  mutatingConfiguration?: string | undefined;
  /**
   * The Service the API server calls this server through, when it does: a
   * CRD whose conversion webhook names another Service (or a URL) belongs to
   * another installation of the same CRDs, and gets no bundle from this one.
   * Two managers injecting their own CA into one CRD would each break the
   * other's conversions at every check.
   */
  service?: { namespace: string; name: string } | undefined;
  caValidityMs?: number | undefined;
  certValidityMs?: number | undefined;
  /** Replace a certificate (or the CA) when it has less than this left; capped at half its validity. */
  rotateBeforeMs?: number | undefined;
  /** How often the Secret, the expiry and the injected bundles are checked. */
  checkIntervalMs?: number | undefined;
  logger?: Logger | undefined;
}

interface Stored {
  secret: V1Secret | undefined;
  /** The CA bundle: the current CA first, then an older one still trusted. */
  bundle: string;
  ca: KeyPair | undefined;
  serving: KeyPair | undefined;
  /** When the current CA entered the bundle (epoch ms), from the Secret's annotation. */
  caSince: number | undefined;
}

const decode = (s: V1Secret, key: string) => {
  const v = s.data?.[key];
  return v === undefined ? undefined : Buffer.from(v, 'base64').toString('utf8');
};
const encode = (v: string) => Buffer.from(v, 'utf8').toString('base64');

/**
 * Certificates the manager makes itself (as cert-controller does for
 * controller-runtime): a CA and a serving certificate kept in one Secret, so
 * every replica serves the same; each replica checks it every
 * `checkIntervalMs`, replaces what nears expiry (the first to write wins, by
 * resourceVersion; the others adopt its pair), and writes the CA bundle into
 * the webhook configurations and into `spec.conversion.webhook.clientConfig`
 * of the CRDs the server converts (again, should someone re-apply them
 * without it).
 *
 * Rotating the serving certificate keeps the CA, so the bundle the API server
 * trusts never changes and no admission fails on it. A new CA is staged (see
 * #renewed): trusted first, served later; the bundle holds both CAs until the
 * old one expires.
 */
export class ManagedCertificates implements CertificateSource {
  readonly #o: ManagedCertificatesOptions;
  readonly #log: Logger;
  readonly #missingWarned = new Set<string>();
  #crds: readonly string[] = [];
  #admission: ServedWebhooks['admission'];
  #rotations = 0;

  constructor(options: ManagedCertificatesOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger;
  }

  /** Writes of the Secret by this replica: a new serving certificate, a new CA, or an expired CA dropped. */
  get rotations(): number {
    return this.#rotations;
  }

  async start(
    signal: AbortSignal,
    onChange: (pair: KeyPair) => void,
    served?: ServedWebhooks,
  ): Promise<KeyPair> {
    this.#crds = served?.conversionCRDs ?? [];
    this.#admission = served?.admission;
    let current = await this.#first(signal);
    const tick = async () => {
      try {
        const next = await this.ensure();
        if (next.cert !== current.cert) {
          current = next;
          this.#log.info({ secret: this.#o.secretName }, 'webhook serving certificate replaced');
          onChange(next);
        }
      } catch (err) {
        this.#log.warn({ err }, 'webhook certificate check failed; retrying at the next interval');
      }
    };
    let running: Promise<void> | undefined;
    const timer = setInterval(() => {
      running ??= tick().finally(() => (running = undefined));
    }, this.#o.checkIntervalMs ?? DEFAULT_CERT_CHECK_INTERVAL_MS);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
    return current;
  }

  /** The first pair: a manager starting while the API server blips retries a few times before giving up. */
  async #first(signal: AbortSignal): Promise<KeyPair> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.ensure();
      } catch (err) {
        if (attempt >= 5 || signal.aborted) throw err;
        this.#log.warn({ err, attempt }, 'webhook certificates not ready; retrying');
        await sleep(500 * 2 ** attempt, undefined, { signal }).catch(() => undefined);
      }
    }
  }

  /** One check: the Secret holds a valid pair for the names (written if not), and the bundle is injected. */
  async ensure(): Promise<KeyPair> {
    for (let attempt = 0; ; attempt++) {
      const stored = await this.#read();
      const wanted = await this.#renewed(stored);
      if (!wanted) {
        await this.#inject(stored.bundle);
        return stored.serving!;
      }
      try {
        await this.#write(stored.secret, wanted);
        this.#rotations++;
      } catch (err) {
        // Another replica wrote first: adopt its pair on the next read.
        if ((isConflict(err) || isAlreadyExists(err)) && attempt < 3) continue;
        throw err;
      }
      await this.#inject(wanted.bundle);
      return wanted.serving!;
    }
  }

  #secrets() {
    return this.#o.client.resource<V1Secret>(Kinds.Secret);
  }

  async #read(): Promise<Stored> {
    let secret: V1Secret | undefined;
    try {
      secret = await this.#secrets().get(this.#o.secretName, { namespace: this.#o.namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const pair = (cert?: string, key?: string) => (cert && key ? { cert, key } : undefined);
    const bundle = secret ? (decode(secret, CA_CERT) ?? '') : '';
    const caCert = parseBundle(bundle)[0];
    return {
      secret,
      bundle,
      ca: secret && caCert ? pair(caCert.toString(), decode(secret, CA_KEY)) : undefined,
      serving: secret ? pair(decode(secret, TLS_CERT), decode(secret, TLS_KEY)) : undefined,
      caSince: Date.parse(secret?.metadata?.annotations?.[CA_SINCE_ANNOTATION] ?? '') || undefined,
    };
  }

  /**
   * What the Secret should hold instead of `stored`, or undefined when it is
   * fine as it is. A new CA is staged: it enters the bundle beside the old
   * one while the serving certificate stays the old CA's; only once the
   * bundle has been out for {@link #caOverlapMs} (the API server has long
   * seen it) is the serving certificate re-issued by the new CA. An expired
   * CA leaves the bundle.
   */
  async #renewed(stored: Stored): Promise<Stored | undefined> {
    const now = Date.now();
    const caValidity = this.#o.caValidityMs ?? DEFAULT_CA_VALIDITY_MS;
    const certValidity = this.#o.certValidityMs ?? DEFAULT_CERT_VALIDITY_MS;
    const rotateBefore = this.#o.rotateBeforeMs ?? DEFAULT_ROTATE_BEFORE_MS;
    const caCert = stored.ca ? safeCert(stored.ca.cert) : undefined;
    const caUsable =
      stored.ca &&
      caCert?.ca &&
      isKeyOf(stored.ca) &&
      // The CA must outlive any serving certificate it signs from now on.
      msUntilExpiry(caCert, now) > Math.min(rotateBefore, caValidity / 2) + certValidity;
    let ca = stored.ca;
    let caSince = stored.caSince;
    const trusted = parseBundle(stored.bundle).filter((c) => msUntilExpiry(c, now) > 0);
    let bundle = trusted.map((c) => c.toString()).join('');
    if (!caUsable || !ca) {
      ca = await generateCA(`regulon-webhook-ca@${Math.floor(now / 1000)}`, caValidity, now);
      // The previous CA stays trusted while it is valid: the serving certificates it signed are still served.
      bundle = [safeCert(ca.cert)!, ...trusted.slice(0, 1)].map((c) => c.toString()).join('');
      caSince = now;
      this.#log.info({ secret: this.#o.secretName }, 'webhook CA generated');
    }
    const current = safeCert(ca.cert)!;
    const servingCert = stored.serving ? safeCert(stored.serving.cert) : undefined;
    const signer =
      stored.serving && servingCert
        ? parseBundle(bundle).find((c) => isSignedPair(stored.serving!, c))
        : undefined;
    const staged = now - (caSince ?? 0) < this.#caOverlapMs;
    const servingFine =
      signer !== undefined &&
      coversExactly(servingCert!, this.#o.names) &&
      msUntilExpiry(servingCert!, now) > Math.min(rotateBefore, certValidity / 2) &&
      // Signed by the current CA, or by the previous one while the new bundle is still being learned.
      (signer.fingerprint256 === current.fingerprint256 || staged);
    // Compared in one PEM spelling (Node's), so an unchanged bundle never costs a write.
    const storedBundle = parseBundle(stored.bundle)
      .map((c) => c.toString())
      .join('');
    if (servingFine && ca === stored.ca && bundle === storedBundle) return undefined;
    // A first certificate (or one that no longer verifies) cannot wait for a staging period.
    const serving = servingFine
      ? stored.serving!
      : await generateServingCert(ca, this.#o.names, certValidity, now);
    return { secret: stored.secret, bundle, ca, serving, caSince };
  }

  /** How long a new CA is in the bundle before a serving certificate it signed is served: a few checks. */
  get #caOverlapMs(): number {
    return Math.max(3 * (this.#o.checkIntervalMs ?? DEFAULT_CERT_CHECK_INTERVAL_MS), 5_000);
  }

  async #write(existing: V1Secret | undefined, next: Stored): Promise<void> {
    const secret: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: this.#o.secretName,
        namespace: this.#o.namespace,
        labels: { 'app.kubernetes.io/component': 'webhook', 'app.kubernetes.io/managed-by': 'regulon' },
        ...(next.caSince
          ? { annotations: { [CA_SINCE_ANNOTATION]: new Date(next.caSince).toISOString() } }
          : {}),
        ...(existing?.metadata?.resourceVersion
          ? { resourceVersion: existing.metadata.resourceVersion }
          : {}),
      },
      data: {
        [CA_CERT]: encode(next.bundle),
        [CA_KEY]: encode(next.ca!.key),
        [TLS_CERT]: encode(next.serving!.cert),
        [TLS_KEY]: encode(next.serving!.key),
      },
    };
    if (existing) await this.#secrets().replace(secret);
    else await this.#secrets().create(secret);
  }

  /**
   * Writes `bundle` wherever it is missing: every webhook of the
   * configurations, the conversion webhook of the CRDs (optimistic
   * concurrency; a lost race is read again, then retried at the next check).
   */
  async #inject(bundle: string): Promise<void> {
    const caBundle = encode(bundle);
    const targets: Array<() => Promise<void>> = [
      ...(
        [
          [ValidatingWebhookConfigurations, this.#o.validatingConfiguration, 'validating'],
          [MutatingWebhookConfigurations, this.#o.mutatingConfiguration, 'mutating'],
        ] as const
      ).flatMap(([type, name, admission]) =>
        name && (this.#admission?.includes(admission) ?? true)
          ? [() => this.#injectInto(type, name, caBundle)]
          : [],
      ),
      ...this.#crds.map((name) => () => this.#injectIntoCRD(name, caBundle)),
    ];
    for (const inject of targets) {
      // Replicas inject the same bundle at once: a lost race is read again, not an error.
      for (let attempt = 1; ; attempt++) {
        try {
          await inject();
          break;
        } catch (err) {
          if (!isConflict(err) || attempt >= 3) throw err;
        }
      }
    }
  }

  /** Warns once about a target left out of the deployment on purpose: it is not news every minute. */
  #warnOnce(key: string, fields: object, message: string): void {
    if (this.#missingWarned.has(key)) return;
    this.#missingWarned.add(key);
    this.#log.warn(fields, message);
  }

  async #injectInto(type: ResourceType<WebhookConfiguration>, name: string, caBundle: string): Promise<void> {
    const resource = this.#o.client.resource<WebhookConfiguration>(type);
    let config: WebhookConfiguration;
    try {
      config = await resource.get(name);
    } catch (err) {
      // An installation without admission webhooks may grant no access to their configurations
      // either: the server still serves conversions, so neither case stops it.
      if (!isNotFound(err) && !isForbidden(err)) throw err;
      this.#warnOnce(
        `${type.kind}/${name}`,
        { configuration: name, kind: type.kind },
        isNotFound(err)
          ? 'webhook configuration not found; no CA bundle injected'
          : 'no access to the webhook configuration (its RBAC comes with the admission webhooks); no CA bundle injected',
      );
      return;
    }
    const webhooks = config.webhooks ?? [];
    if (webhooks.every((w) => w.clientConfig?.caBundle === caBundle)) return;
    for (const w of webhooks) w.clientConfig = { ...w.clientConfig, caBundle };
    await resource.replace(config);
    this.#log.info({ configuration: name, kind: type.kind }, 'CA bundle injected');
  }

  /**
   * Writes the bundle into a CRD's conversion webhook, as cert-controller
   * does: a merge patch of that one field, guarded by the resourceVersion
   * read (a CRD is large and other tools apply it; a patch sends one field and
   * needs `patch` on it, not `update`). A CRD without webhook conversion gets
   * nothing: the field would be refused without a webhook to belong to.
   */
  async #injectIntoCRD(name: string, caBundle: string): Promise<void> {
    const resource = this.#o.client.resource<V1CustomResourceDefinition>(Kinds.CustomResourceDefinition);
    let crd: V1CustomResourceDefinition;
    try {
      crd = await resource.get(name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.#warnOnce(
        `CustomResourceDefinition/${name}`,
        { crd: name },
        'CustomResourceDefinition not found; no CA bundle injected',
      );
      return;
    }
    const conversion = crd.spec.conversion;
    if (conversion?.strategy !== 'Webhook' || !conversion.webhook?.clientConfig) {
      this.#warnOnce(
        `CustomResourceDefinition/${name}/strategy`,
        { crd: name, strategy: conversion?.strategy ?? 'None' },
        'CustomResourceDefinition has no webhook conversion; no CA bundle injected',
      );
      return;
    }
    const own = this.#o.service;
    const target = conversion.webhook.clientConfig.service;
    if (own && (target?.namespace !== own.namespace || target.name !== own.name)) {
      this.#warnOnce(
        `CustomResourceDefinition/${name}/service`,
        {
          crd: name,
          service: target ? `${target.namespace}/${target.name}` : conversion.webhook.clientConfig.url,
        },
        "CustomResourceDefinition's conversion webhook is another installation's; no CA bundle injected",
      );
      return;
    }
    if (conversion.webhook.clientConfig.caBundle === caBundle) return;
    await resource.patch(
      name,
      {
        metadata: { resourceVersion: crd.metadata?.resourceVersion },
        spec: { conversion: { webhook: { clientConfig: { caBundle } } } },
      },
      { type: 'merge', fieldManager: 'regulon-webhook-certificates' },
    );
    this.#log.info({ crd: name }, 'CA bundle injected into the conversion webhook');
  }
}

/**
 * The RBAC rules ManagedCertificates needs to inject its CA bundle, named
 * object by object: `get` and `update` of the two webhook configurations,
 * `get` and `patch` of the CRDs whose conversions the server serves
 * (`server.conversions().map((c) => c.crdName)`). Cluster-scoped: a
 * ClusterRole's. (The Secret's rules are the Role's of its namespace.)
 */
export function caInjectionRules(targets: {
  validatingConfiguration?: string | undefined;
  mutatingConfiguration?: string | undefined;
  conversionCRDs?: readonly string[] | undefined;
}): V1PolicyRule[] {
  const rules: V1PolicyRule[] = [];
  for (const [resource, name] of [
    ['validatingwebhookconfigurations', targets.validatingConfiguration],
    ['mutatingwebhookconfigurations', targets.mutatingConfiguration],
  ] as const)
    if (name)
      rules.push({
        apiGroups: [WEBHOOK_CONFIGURATION_GROUP],
        resources: [resource],
        resourceNames: [name],
        verbs: ['get', 'update'],
      });
  if (targets.conversionCRDs?.length)
    rules.push({
      apiGroups: [Kinds.CustomResourceDefinition.group],
      resources: [Kinds.CustomResourceDefinition.plural],
      resourceNames: [...targets.conversionCRDs].sort(),
      verbs: ['get', 'patch'],
    });
  return rules;
}

function safeCert(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

function isKeyOf(pair: KeyPair): boolean {
  try {
    return new X509Certificate(pair.cert).checkPrivateKey(createPrivateKey(pair.key));
  } catch {
    return false;
  }
}
