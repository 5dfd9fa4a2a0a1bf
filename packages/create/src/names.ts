// The names a scaffolded project and kind are known by, checked before a file
// is written: a bad name found by the API server after generation would leave
// a half-made project behind.

/** What `regulon create api` is told about the kind. */
export interface ApiRequest {
  group: string;
  version: string;
  kind: string;
  /** Default: the kind in lower case, pluralised the way English does it for the usual endings. */
  plural?: string | undefined;
}

/** Every name the templates need, derived once. */
export interface KindNames {
  group: string;
  version: string;
  /** `Memcached` */
  kind: string;
  /** `memcacheds` */
  plural: string;
  /** `memcached` */
  singular: string;
  /** `memcached`, `memcached-cluster`: the controller's name, its flags and its file names. */
  kebab: string;
  /** `memcachedCluster`: a TypeScript identifier. */
  camel: string;
}

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
const VERSION = /^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$/;
/** The namespace is `<project>-system`, a DNS label of at most 63 characters. */
export const MAX_PROJECT_NAME = 56;

export class NameError extends Error {
  override name = 'NameError';
}

/** The project's name: its npm name, Deployment, ServiceAccount and (with `-system`) namespace. */
export function checkProjectName(name: string): string {
  if (!DNS_LABEL.test(name) || name.length > MAX_PROJECT_NAME)
    throw new NameError(
      `project name "${name}": use lower-case letters, digits and hyphens, starting with a letter, at most ${MAX_PROJECT_NAME} characters (it names the Deployment and the namespace <name>-system)`,
    );
  return name;
}

export function pluralOf(lowerKind: string): string {
  if (/(s|x|z|ch|sh)$/.test(lowerKind)) return `${lowerKind}es`;
  if (/[^aeiou]y$/.test(lowerKind)) return `${lowerKind.slice(0, -1)}ies`;
  return `${lowerKind}s`;
}

export function kindNames(request: ApiRequest): KindNames {
  const { group, version, kind } = request;
  const labels = group.split('.');
  if (labels.length < 2 || !labels.every((l) => DNS_LABEL.test(l)) || group.length > 253)
    throw new NameError(
      `--group "${group}": a DNS name with at least one dot that you own (cache.example.com), so that it cannot clash with another project's API`,
    );
  if (!VERSION.test(version))
    throw new NameError(`--version "${version}": a Kubernetes API version such as v1, v1alpha1 or v2beta3`);
  if (!KIND.test(kind) || kind.length > 63)
    throw new NameError(`--kind "${kind}": UpperCamelCase letters and digits (Memcached, WebSite)`);
  const singular = kind.toLowerCase();
  const plural = request.plural ?? pluralOf(singular);
  if (!DNS_LABEL.test(plural))
    throw new NameError(`--plural "${plural}": lower-case letters, digits and hyphens`);
  if (plural === singular)
    throw new NameError(`--plural "${plural}": must differ from the singular (pass --plural explicitly)`);
  const kebab = kind.replace(/(?<=[a-z0-9])([A-Z])/g, '-$1').toLowerCase();
  const camel = kind[0]!.toLowerCase() + kind.slice(1);
  return { group, version, kind, plural, singular, kebab, camel };
}
