import {
  Conditions,
  defineKind,
  GrowOnly,
  Immutable,
  Quantity,
  ResourceRequirements,
  Type,
  WithRules,
  type KindObject,
  Phase,
} from '@regulon/crd';
import { ENGINE_VERSIONS, RESERVED_PARAMETERS } from './versions.ts';

export const GROUP = 'regulon.dev';

const celList = (xs: readonly string[]) => `[${xs.map((x) => `'${x}'`).join(', ')}]`;
const PG = celList(ENGINE_VERSIONS.postgres);
const MY = celList(ENGINE_VERSIONS.mysql);
/** Each version's rank in upgrade order, as a CEL map: lookups are cheap where list scans blow the cost budget. */
const RANK = `{${Object.values(ENGINE_VERSIONS)
  .flatMap((vs) => vs.map((v, i) => `'${v}': ${i}`))
  .join(', ')}}`;
const reserved = [...new Set([...RESERVED_PARAMETERS.postgres, ...RESERVED_PARAMETERS.mysql])];

/** A standard 5-field cron expression (minute hour day-of-month month day-of-week), or a @-macro. */
export const CRON_PATTERN =
  '^(@(yearly|annually|monthly|weekly|daily|hourly)|([0-9*/,-]+)\\s+([0-9*/,-]+)\\s+([0-9*/,?LW-]+)\\s+([0-9A-Za-z*/,-]+)\\s+([0-9A-Za-z*/,?L#-]+))$';

export const DatabaseSpec = WithRules(
  Type.Object({
    engine: Immutable(
      Type.Union([Type.Literal('postgres'), Type.Literal('mysql')], {
        description: 'Database engine.',
        maxLength: 16,
      }),
      'engine is immutable: create a new Database and migrate the data instead',
    ),
    version: Type.String({ maxLength: 16, description: 'Engine version; see the allow-list per engine.' }),
    allowMajorVersionUpgrade: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Opt in to a major version upgrade (e.g. postgres 16 to 17).',
      }),
    ),
    replicas: Type.Integer({
      minimum: 1,
      maximum: 5,
      default: 1,
      description: 'Pods; ordinal 0 is the primary.',
    }),
    storage: Type.Object({
      size: GrowOnly(
        Quantity({ description: 'Volume size per Pod; can grow, never shrink.' }),
        'storage.size can grow but never shrink',
      ),
      storageClassName: Type.Optional(Type.String({ maxLength: 253 })),
    }),
    backup: Type.Optional(
      Type.Object({
        enabled: Type.Boolean({ default: true }),
        schedule: WithRules(Type.String({ maxLength: 64, default: '0 3 * * *' }), {
          rule: `self.matches('${CRON_PATTERN.replace(/\\/g, '\\\\')}')`,
          message: "backup.schedule must be a standard 5-field cron expression such as '0 3 * * *'",
        }),
        historyLimit: Type.Integer({ minimum: 1, maximum: 30, default: 3 }),
      }),
    ),
    resources: Type.Optional(ResourceRequirements()),
    parameters: Type.Optional(
      WithRules(
        Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 256 }), { maxProperties: 64 }),
        {
          rule: `!self.exists(k, k in ${celList(reserved)})`,
          message: `parameters may not set settings the operator manages: ${reserved.join(', ')}`,
        },
      ),
    ),
    credentials: Type.Optional(
      Type.Object({
        secretName: Type.String({
          maxLength: 253,
          description:
            'Use this existing Secret (keys username, password) instead of generating credentials.',
        }),
      }),
    ),
    pvcRetentionPolicy: Type.Optional(
      Type.Union([Type.Literal('Retain'), Type.Literal('Delete')], {
        default: 'Retain',
        description: 'What happens to the data volumes when the Database is deleted.',
      }),
    ),
  }),
  {
    rule: `self.engine == 'postgres' ? self.version in ${PG} : self.version in ${MY}`,
    messageExpression: `'version ' + self.version + ' is not supported for ' + self.engine + '; supported: ' + (self.engine == 'postgres' ? '${ENGINE_VERSIONS.postgres.join(', ')}' : '${ENGINE_VERSIONS.mysql.join(', ')}')`,
    fieldPath: '.version',
    reason: 'FieldValueInvalid',
  },
  {
    rule: `self.engine != oldSelf.engine || !(oldSelf.version in ${RANK}) || !(self.version in ${RANK}) || ${RANK}[self.version] >= ${RANK}[oldSelf.version]`,
    messageExpression: `'version cannot be downgraded from ' + oldSelf.version + ' to ' + self.version`,
    fieldPath: '.version',
  },
  {
    rule: `self.version.split('.')[0] == oldSelf.version.split('.')[0] || (has(self.allowMajorVersionUpgrade) && self.allowMajorVersionUpgrade)`,
    messageExpression: `'upgrading from ' + oldSelf.version + ' to ' + self.version + ' is a major version upgrade: set spec.allowMajorVersionUpgrade: true to confirm it'`,
    fieldPath: '.version',
  },
);

export const DatabaseStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Conditions()),
  phase: Type.Optional(Phase()),
  replicas: Type.Optional(Type.Integer()),
  readyReplicas: Type.Optional(Type.Integer()),
  selector: Type.Optional(Type.String()),
  currentVersion: Type.Optional(Type.String({ description: 'The version every Pod runs.' })),
  lastBackup: Type.Optional(Type.String({ format: 'date-time' })),
  binding: Type.Optional(Type.Object({ name: Type.String() })),
  endpoint: Type.Optional(Type.String()),
});

export const Database = defineKind({
  group: GROUP,
  version: 'v1alpha1',
  kind: 'Database',
  plural: 'databases',
  singular: 'database',
  shortNames: ['db'],
  categories: ['regulon'],
  scope: 'Namespaced',
  description: 'A PostgreSQL or MySQL database run as a StatefulSet.',
  spec: DatabaseSpec,
  status: DatabaseStatus,
  scale: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector',
  },
  printerColumns: [
    { name: 'Engine', type: 'string', jsonPath: '.spec.engine' },
    { name: 'Version', type: 'string', jsonPath: '.spec.version' },
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Status', type: 'string', jsonPath: '.status.phase' },
    { name: 'Last Backup', type: 'date', jsonPath: '.status.lastBackup' },
  ],
});

export type DatabaseObject = KindObject<typeof Database>;
