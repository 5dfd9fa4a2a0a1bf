// The Database's bad-input corpus at admission: one row per input, each a
// change to one field of a valid Database, with what the API server must say.
// Fields × forms: zero, negative, absurd units, wrong types, empty strings,
// too long, names a child could not carry, cron fields out of range, requests
// above limits, unknown engines and versions. The accepted rows are the edges
// the rules must not refuse. spec.parameters has its own corpus
// (parameters-corpus.ts). Run by api.integration.test.ts and by
// tools/scripts/corpus-table.ts.
import type { AdmissionCase, AdmissionCorpus } from '@regulon/crd/testing';
import { Database, NO_BACKUP_DESTINATION_MESSAGE, type DatabaseObject } from '../api.ts';
import { MAX_NAME_LENGTH } from '../names.ts';

/** Messages, as the API server words them. */
export const M = {
  positive: /^Invalid value: .*: must be greater than zero$/,
  notAQuantity: /in body should match '\^\(\\\+\|-\)\?/,
  type: (t: string) => new RegExp(`in body must be of type ${t}`),
  unsupported: /^Unsupported value: .*: supported values: /,
  empty: /should be at least 1 chars long/,
  tooLong: (n: number) => new RegExp(`Too long: may not be (more than|longer than) ${n}`),
  atLeast: (n: number) => new RegExp(`should be greater than or equal to ${n}`),
  atMost: (n: number) => new RegExp(`should be less than or equal to ${n}`),
  secret: /must be the name of a Secret: a lowercase RFC 1123 subdomain/,
  storageClass: /must be the name of a StorageClass: a lowercase RFC 1123 subdomain/,
  cronShape: /backup\.schedule must be five fields \(minute hour day-of-month month day-of-week\)/,
  cronField: (name: string, value: string) =>
    new RegExp(
      `backup\\.schedule: the ${name} field "${value.replace(/[*+?]/g, '\\$&')}" is not valid: use `,
    ),
  cronRange: /backup\.schedule: a range runs from low to high/,
  unknownResource: (r: string) => new RegExp(`unknown resource "${r}": use cpu, memory, ephemeral-storage`),
  requestOverLimit: (r: string) =>
    new RegExp(`requests\\.${r} \\(.*\\) must not be greater than limits\\.${r}`),
  serviceName:
    /cannot be used: a Database names its .* after itself, and a Service name must be a DNS-1035 label/,
  nameTooLong: new RegExp(`is too long: a Database name is at most ${MAX_NAME_LENGTH} characters`),
  objectName: /a lowercase RFC 1123 subdomain must consist of/,
  version: /^Invalid value: version must be a dotted number such as 16\.8/,
  noBackupDestination: new RegExp(
    `^Invalid value: ${NO_BACKUP_DESTINATION_MESSAGE.replace(/[.*+?()[\]{}|^$\\]/g, '\\$&')}$`,
  ),
};

const rejected = (field: string, form: string, values: unknown[], message: RegExp): AdmissionCase[] =>
  values.map((value) => ({ field, value, form, rejected: message }));
const accepted = (field: string, form: string, values: unknown[], other?: Record<string, unknown>) =>
  values.map((value): AdmissionCase => ({ field, value, form, ...(other ? { with: other } : {}) }));

/** Cases on spec.backup's own fields, with backups off: the rule that backups need an object store stays out of them. */
const backupOff = (cases: AdmissionCase[]): AdmissionCase[] =>
  cases.map((c) => ({ ...c, with: { ...c.with, 'spec.backup.enabled': false } }));
/** An object store, as the schema takes it (nothing checks it exists at admission). */
const STORE = {
  endpoint: 'https://s3.example.com',
  bucket: 'backups',
  credentials: { secretName: 'store-keys' },
};

const SIZE = 'spec.storage.size';
const CLASS = 'spec.storage.storageClassName';
const SCHEDULE = 'spec.backup.schedule';
const SECRET = 'spec.credentials.secretName';
const requests = (r: string) => `spec.resources.requests.${r}`;
const limits = (r: string) => `spec.resources.limits.${r}`;

/** A schedule with one field changed, for the row that field is out of range in. */
const cron = (i: number, value: string) => {
  const fields = ['0', '3', '*', '*', '*'];
  fields[i] = value;
  return fields.join(' ');
};
const CRON_NAMES = ['minute', 'hour', 'day of month', 'month', 'day of week'];
const cronField = (i: number, value: string, form: string): AdmissionCase => ({
  field: SCHEDULE,
  value: cron(i, value),
  form,
  rejected: M.cronField(CRON_NAMES[i]!, value),
});

export const DATABASE_CASES: AdmissionCase[] = [
  // spec.storage.size: the volume size.
  ...rejected(SIZE, 'zero', ['0', 0, '0Gi', '0.0'], M.positive),
  ...rejected(SIZE, 'negative', ['-1Gi', -1, '-0.5'], M.positive),
  ...rejected(SIZE, 'absurd unit', ['1Gb', '10GB', '1gi', '5 Gi', '1.5.5Gi', 'Gi', 'lots'], M.notAQuantity),
  ...rejected(SIZE, 'empty', [''], M.notAQuantity),
  ...rejected(SIZE, 'wrong type', [true], M.type('integer|string|.*int-or-string')),
  ...accepted(SIZE, 'smallest', ['1', 1, '1Mi', '0.5Gi', '1e3']),

  // spec.storage.storageClassName: names a StorageClass.
  ...rejected(CLASS, 'empty', [''], M.empty),
  ...rejected(CLASS, 'not a name', ['Fast SSD', 'FAST', 'fast_ssd', '-fast'], M.storageClass),
  ...rejected(CLASS, 'too long', ['a'.repeat(254)], M.tooLong(253)),
  ...accepted(CLASS, 'a class name', ['kwok-volume', 'fast.ssd.example.com']),

  // spec.backup's own fields, with backups off: on, they need an object store (below).
  ...backupOff([
    // spec.backup.schedule: what a CronJob accepts, each field in its range.
    cronField(0, '60', 'minute out of range'),
    cronField(0, '99', 'minute out of range'),
    cronField(0, '-1', 'negative minute'),
    cronField(1, '24', 'hour out of range'),
    cronField(1, '99', 'hour out of range'),
    cronField(2, '0', 'day of month out of range'),
    cronField(2, '32', 'day of month out of range'),
    cronField(2, 'L', 'Quartz syntax (L)'),
    cronField(3, '0', 'month out of range'),
    cronField(3, '13', 'month out of range'),
    cronField(3, 'foo', 'unknown month name'),
    cronField(4, '7', 'day of week out of range (7 is not Sunday for a CronJob)'),
    cronField(4, 'sunday', 'day name spelled out'),
    cronField(4, '1#2', 'Quartz syntax (#)'),
    cronField(0, '*/0', 'step of zero'),
    cronField(0, '1,,2', 'empty list item'),
    ...rejected(
      SCHEDULE,
      'range backwards',
      ['30-10 * * * *', '0 3 * * fri-mon', '0 3 * dec-jan *'],
      M.cronRange,
    ),
    ...rejected(
      SCHEDULE,
      'not five fields',
      ['0 3 * *', '0 0 3 * * *', 'every day', '@fortnightly', '@reboot', '@daily ', 'TZ=UTC 0 3 * * *'],
      M.cronShape,
    ),
    ...rejected(SCHEDULE, 'empty', [''], M.empty),
    ...rejected(SCHEDULE, 'too long', [`0 3 * * ${'1,'.repeat(40)}1`], M.tooLong(64)),
    ...rejected(SCHEDULE, 'wrong type', [3], M.type('string')),
    ...accepted(SCHEDULE, 'edge', [
      '*/5 * * * *',
      '0 0 29 2 *',
      '59 23 31 12 6',
      '0 3 ? * MON-FRI',
      '0,30 9-17/2 * * 1-5',
      '0 0 1 jan,jul *',
      '@daily',
      '@midnight',
      '@every 6h',
    ]),

    // spec.backup's other fields.
    ...rejected('spec.backup.historyLimit', 'zero', [0], M.atLeast(1)),
    ...rejected('spec.backup.historyLimit', 'too many', [31], M.atMost(30)),
    ...rejected('spec.backup.historyLimit', 'wrong type', ['3'], M.type('integer')),
  ]),
  ...rejected('spec.backup.enabled', 'wrong type', ['yes'], M.type('boolean')),

  // Backups need somewhere to go that outlasts them: without an object store the dump reached
  // only a scratch volume deleted with its Pod. enabled defaults to true, so {} is refused too.
  ...rejected(
    'spec.backup',
    'enabled with no object store',
    [{}, { enabled: true }, { enabled: true, schedule: '0 3 * * *', historyLimit: 3 }],
    M.noBackupDestination,
  ),
  ...[
    ['mariadb', '11.4.4'],
    ['mysql', '8.4.4'],
  ].flatMap(([engine, version]) =>
    rejected(
      'spec.backup',
      `enabled with no object store (${engine})`,
      [{ schedule: '0 3 * * *' }],
      M.noBackupDestination,
    ).map((c) => ({ ...c, with: { 'spec.engine': engine, 'spec.version': version } })),
  ),
  {
    field: 'spec.backup.objectStore',
    value: STORE,
    form: 'mysql with an object store',
    with: { 'spec.engine': 'mysql', 'spec.version': '8.4.4' },
    rejected:
      /mysql backups to an object store are not implemented yet, so a mysql Database sets backup\.enabled: false/,
  },
  ...accepted('spec.backup', 'off', [{ enabled: false }, { enabled: false, schedule: '@daily' }]),
  ...accepted('spec.backup', 'off (mysql)', [{ enabled: false }], {
    'spec.engine': 'mysql',
    'spec.version': '8.4.4',
  }),
  ...accepted('spec.backup', 'with an object store', [
    { objectStore: STORE },
    { enabled: true, objectStore: STORE },
  ]),
  ...accepted('spec.backup', 'with an object store (mariadb)', [{ objectStore: STORE }], {
    'spec.engine': 'mariadb',
    'spec.version': '11.4.4',
  }),

  // spec.resources: container requests and limits.
  ...rejected(requests('cpu'), 'zero', ['0', 0], M.positive),
  ...rejected(requests('cpu'), 'negative', ['-500m'], M.positive),
  ...rejected(requests('memory'), 'negative', ['-1Gi'], M.positive),
  ...rejected(limits('memory'), 'zero', ['0Mi'], M.positive),
  ...rejected(requests('memory'), 'absurd unit', ['1GB', '512 Mi'], M.notAQuantity),
  ...rejected(requests('gpu'), 'unknown resource', ['1'], M.unknownResource('gpu')),
  ...rejected(
    limits('storage'),
    'unknown resource (a volume, not a container, has storage)',
    ['1Gi'],
    M.unknownResource('storage'),
  ),
  ...rejected(requests('CPU'), 'unknown resource (case)', ['1'], M.unknownResource('CPU')),
  {
    field: requests('cpu'),
    value: '2',
    form: 'request above limit',
    with: { [limits('cpu')]: '1' },
    rejected: M.requestOverLimit('cpu'),
  },
  {
    field: requests('memory'),
    value: '2Gi',
    form: 'request above limit',
    with: { [limits('memory')]: '1Gi' },
    rejected: M.requestOverLimit('memory'),
  },
  {
    field: requests('cpu'),
    value: 2,
    form: 'request above limit (number)',
    with: { [limits('cpu')]: '1500m' },
    rejected: M.requestOverLimit('cpu'),
  },
  ...accepted(requests('cpu'), 'request equal to limit', ['1m'], { [limits('cpu')]: '1m' }),
  ...accepted(requests('memory'), 'request below limit', ['1Mi'], { [limits('memory')]: 1073741824 }),
  ...accepted(requests('ephemeral-storage'), 'request only', ['1Gi']),

  // spec.credentials.secretName: names a Secret.
  ...rejected(SECRET, 'empty', [''], M.empty),
  ...rejected(SECRET, 'not a name', ['My_Secret', 'a..b', '-secret', 'has space'], M.secret),
  ...rejected(SECRET, 'too long', ['a'.repeat(254)], M.tooLong(253)),
  ...accepted(SECRET, 'a Secret name', ['orders-credentials', 'db.credentials.v2']),

  // metadata.name: the StatefulSet, Services and CronJob are named after it.
  ...rejected('metadata.name', 'dots (not a Service name)', ['my.db'], M.serviceName),
  ...rejected('metadata.name', 'starts with a digit', ['1db'], M.serviceName),
  ...rejected('metadata.name', 'upper case', ['MyDb'], M.objectName),
  ...rejected('metadata.name', 'too long for its children', ['d'.repeat(MAX_NAME_LENGTH + 1)], M.nameTooLong),
  ...accepted('metadata.name', 'edge', ['a', 'd'.repeat(MAX_NAME_LENGTH), 'orders-2']),

  // The engine and its version.
  ...rejected('spec.engine', 'unknown engine', ['oracle', 'Postgres', ''], M.unsupported),
  ...rejected('spec.engine', 'wrong type', [5], M.type('string')),
  ...rejected('spec.version', 'not a version', ['latest', '', '16.8-rc1', '16.8.1.2', 'v16'], M.version),
  // Which versions exist is the image catalog's to say, at reconcile time (VersionNotInCatalog).
  ...accepted('spec.version', 'well-formed, whatever the catalog has', ['99.1', '8.4.4', '16']),
  ...rejected('spec.version', 'wrong type', [16.8], M.type('string')),
  ...rejected('spec.version', 'too long', ['16.8'.padEnd(17, '0')], M.tooLong(16)),

  // Counts and switches.
  ...rejected('spec.replicas', 'zero', [0], M.atLeast(1)),
  ...rejected('spec.replicas', 'negative', [-1], M.atLeast(1)),
  ...rejected('spec.replicas', 'too many', [6], M.atMost(5)),
  ...rejected('spec.replicas', 'wrong type', ['3', 1.5], M.type('integer')),
  // Replication: postgres and mariadb replicate; mysql runs one instance.
  ...accepted('spec.replicas', 'replicated engine', [3], {
    'spec.engine': 'mariadb',
    'spec.version': '10.11.11',
  }),
  {
    field: 'spec.replicas',
    value: 3,
    form: 'mysql with replicas',
    with: { 'spec.engine': 'mysql', 'spec.version': '8.4.4' },
    rejected: /a mysql Database runs one instance \(replicas: 1\).*Use postgres or mariadb for replicas/,
  },
  {
    field: 'spec.replication.synchronous',
    value: true,
    form: 'synchronous with one instance',
    rejected: /synchronous replication needs replicas >= 2/,
  },
  ...accepted('spec.replication.maxLag.transactions', 'a bound', [0, 50_000], { 'spec.engine': 'mariadb' }),
  ...rejected('spec.replication.maxLag.transactions', 'negative', [-1], M.atLeast(0)),
  ...accepted('spec.replication.maxLag.bytes', 'a bound', [0, 1_073_741_824]),
  ...rejected('spec.replication.maxLag.bytes', 'negative', [-1], M.atLeast(0)),
  ...rejected('spec.pvcRetentionPolicy', 'unknown policy', ['Keep', 'retain'], M.unsupported),
  ...rejected('spec.allowMajorVersionUpgrade', 'wrong type', ['yes'], M.type('boolean')),
];

export const DATABASE_CORPUS: AdmissionCorpus<DatabaseObject> = {
  kind: Database,
  valid: (metadata) =>
    Database.object({
      metadata,
      spec: { engine: 'postgres', version: '16.8', replicas: 1, storage: { size: '1Gi' } },
    }),
  cases: DATABASE_CASES,
};
