// The MyApp's bad-input corpus at admission: one row per input, each a change
// to one field of a valid MyApp, with what the API server must say. Its
// Database and Cache templates carry those kinds' rules, so a few rows prove
// they travel; the kinds' own corpora cover them field by field. The accepted
// rows are the edges the rules must not refuse. Run by api.integration.test.ts
// and by tools/scripts/corpus-table.ts.
import type { AdmissionCase, AdmissionCorpus } from '@regulon/crd/testing';
import { MyApp, type MyAppObject } from '../api.ts';
import { MAX_NAME_LENGTH } from '../children.ts';

/** Messages, as the API server words them. */
export const M = {
  image: /must be an image reference such as ghcr\.io\/example\/shop:1\.0/,
  positive: /^Invalid value: .*: must be greater than zero$/,
  type: (t: string) => new RegExp(`in body must be of type ${t}`),
  unsupported: /^Unsupported value: .*: supported values: /,
  empty: /should be at least 1 chars long/,
  tooLong: (n: number) => new RegExp(`Too long: may not be (more than|longer than) ${n}`),
  atLeast: (n: number) => new RegExp(`should be greater than or equal to ${n}`),
  atMost: (n: number) => new RegExp(`should be less than or equal to ${n}`),
  envName: /an environment variable name is printable ASCII characters other than '='/,
  secret: /must be the name of a Secret: a lowercase RFC 1123 subdomain/,
  secretKey: /a Secret key is letters, digits, '-', '_' and '\.'/,
  valueOrValueFrom: /an env var has either value or valueFrom, not both/,
  cronField: /backup\.schedule: the minute field "99" is not valid/,
  requestOverLimit: /requests\.cpu \(2\) must not be greater than limits\.cpu \(1\)/,
  cacheMemory: /memory must be between 32Mi and 64Gi/,
  version: /version must be a dotted number such as 16\.8/,
  serviceName:
    /cannot be used: a MyApp names its .* after itself, and a Service name must be a DNS-1035 label/,
  nameTooLong: new RegExp(`is too long: a MyApp name is at most ${MAX_NAME_LENGTH} characters`),
  objectName: /a lowercase RFC 1123 subdomain must consist of/,
};

const rejected = (
  field: string,
  form: string,
  values: unknown[],
  message: RegExp,
  other?: Record<string, unknown>,
) =>
  values.map((value): AdmissionCase => ({
    field,
    value,
    form,
    rejected: message,
    ...(other ? { with: other } : {}),
  }));
const accepted = (field: string, form: string, values: unknown[]) =>
  values.map((value): AdmissionCase => ({ field, value, form }));
const env = (entry: Record<string, unknown>) => [{ name: 'A', ...entry }];
const fromSecret = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });

export const MYAPP_CASES: AdmissionCase[] = [
  // spec.image: what the kubelet can pull.
  ...rejected('spec.image', 'empty', [''], M.empty),
  ...rejected(
    'spec.image',
    'not an image reference',
    ['shöp :1', 'Shop:1', 'shop:', 'shop@sha256:xyz', ' shop:1', 'shop:1 ', 'ghcr.io//shop', 'shop:-1'],
    M.image,
  ),
  ...rejected('spec.image', 'too long', [`ghcr.io/${'a'.repeat(510)}`], M.tooLong(512)),
  ...accepted('spec.image', 'an image reference', [
    'shop',
    'localhost:5000/team/shop:v1.2.3',
    'Registry.Example.com/shop:latest',
    `redis@sha256:${'a'.repeat(64)}`,
    `ghcr.io/example/shop:1.0@sha256:${'0'.repeat(64)}`,
  ]),

  // Ports and counts.
  ...rejected('spec.port', 'zero', [0], M.atLeast(1)),
  ...rejected('spec.port', 'out of range', [65536], M.atMost(65535)),
  ...rejected('spec.port', 'wrong type', ['8080'], M.type('integer')),
  ...rejected('spec.replicas', 'zero', [0], M.atLeast(1)),
  ...rejected('spec.replicas', 'too many', [11], M.atMost(10)),
  ...rejected('spec.service.type', 'unknown type', ['External'], M.unsupported),
  ...rejected('spec.service.port', 'zero', [0], M.atLeast(1)),

  // spec.env: names the Pod's validation takes, Secret references it can resolve.
  ...rejected('spec.env', 'empty name', [[{ name: '', value: 'x' }]], M.empty),
  ...rejected('spec.env', 'name with =', [[{ name: 'A=B', value: 'x' }]], M.envName),
  ...rejected('spec.env', 'name not ASCII', [[{ name: 'Ä', value: 'x' }]], M.envName),
  ...rejected(
    'spec.env',
    'value and valueFrom',
    [env({ value: 'x', ...fromSecret('s', 'k') })],
    M.valueOrValueFrom,
  ),
  ...rejected('spec.env', 'empty Secret name', [env(fromSecret('', 'k'))], M.empty),
  ...rejected('spec.env', 'Secret name not a name', [env(fromSecret('Bad_Name', 'k'))], M.secret),
  ...rejected('spec.env', 'empty Secret key', [env(fromSecret('s', ''))], M.empty),
  ...rejected(
    'spec.env',
    'Secret key not a key',
    [env(fromSecret('s', 'a b')), env(fromSecret('s', '..x'))],
    M.secretKey,
  ),
  ...accepted('spec.env', 'edge', [
    [
      { name: 'my.var-1 x', value: '' },
      { name: 'B', ...fromSecret('s.v2', '.a_b-c') },
    ],
  ]),

  // The templates carry the Database's and the Cache's rules.
  ...rejected('spec.database.storage.size', 'zero', ['0'], M.positive),
  ...rejected('spec.database.backup.schedule', 'minute out of range', ['99 99 * * *'], M.cronField),
  ...rejected('spec.database.credentials.secretName', 'empty', [''], M.empty),
  ...rejected('spec.database.resources.requests.cpu', 'request above limit', ['2'], M.requestOverLimit, {
    'spec.database.resources.limits.cpu': '1',
  }),
  ...rejected('spec.database.version', 'not a version', ['latest', '16.8-alpine'], M.version),
  ...rejected('spec.cache.memory', 'zero', ['0'], M.cacheMemory),
  ...rejected('spec.cache.persistence.size', 'negative', ['-1Gi'], M.positive, {
    'spec.cache.persistence.enabled': true,
  }),

  // metadata.name: the Database, Cache, Deployment and Service are named after it.
  ...rejected('metadata.name', 'dots (not a Service name)', ['my.app'], M.serviceName),
  ...rejected('metadata.name', 'starts with a digit', ['1app'], M.serviceName),
  ...rejected('metadata.name', 'upper case', ['Shop'], M.objectName),
  ...rejected('metadata.name', 'too long for its children', ['m'.repeat(MAX_NAME_LENGTH + 1)], M.nameTooLong),
  ...accepted('metadata.name', 'edge', ['m'.repeat(MAX_NAME_LENGTH)]),
];

export const MYAPP_CORPUS: AdmissionCorpus<MyAppObject> = {
  kind: MyApp,
  valid: (metadata) =>
    MyApp.object({
      metadata,
      spec: {
        image: 'ghcr.io/example/shop:1.0',
        replicas: 1,
        port: 8080,
        database: { engine: 'postgres', version: '16.8', replicas: 1, storage: { size: '1Gi' } },
        cache: { engine: 'redis', version: '8.0.6', replicas: 1, memory: '256Mi', maxMemoryPercent: 75 },
      },
    }),
  cases: MYAPP_CASES,
};
