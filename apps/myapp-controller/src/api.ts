import { CacheSpec } from '@regulon/cache-controller';
import {
  ChildNamingRules,
  Conditions,
  ContainerImage,
  defineKind,
  EnvVars,
  Type,
  type KindObject,
  Phase,
} from '@regulon/crd';
import { DatabaseSpecV1alpha1, GROUP } from '@regulon/database-controller';
import { DEFAULT_READINESS_PATH, MAX_NAME_LENGTH } from './children.ts';

/**
 * The child templates are the Database and Cache specs themselves, rules and
 * all: an invalid template is refused when the MyApp is written, not later by
 * the child.
 */
export const MyAppSpec = Type.Object({
  image: ContainerImage({ description: 'Container image of the application.' }),
  replicas: Type.Integer({ minimum: 1, maximum: 10, default: 1 }),
  port: Type.Integer({
    minimum: 1,
    maximum: 65535,
    default: 8080,
    description: 'Port the application listens on.',
  }),
  readinessPath: Type.Optional(
    Type.String({
      default: DEFAULT_READINESS_PATH,
      pattern: '^/[!-~]*$',
      maxLength: 256,
      description:
        'HTTP path on the application port of its readiness probe (default /readyz). The application ' +
        'should answer 200 there only when it can use its database and cache with the injected ' +
        'DATABASE_* and CACHE_* settings: a Pod that cannot is not Ready, and neither is the MyApp.',
    }),
  ),
  env: Type.Optional(EnvVars()),
  // The Database spec as it was when MyApp v1alpha1 was defined: the child is
  // written at the Database's current version (children.ts converts), and this
  // schema changes only with a MyApp version of its own.
  database: Type.Optional(DatabaseSpecV1alpha1),
  cache: Type.Optional(CacheSpec),
  service: Type.Optional(
    Type.Object({
      type: Type.Union([Type.Literal('ClusterIP'), Type.Literal('NodePort'), Type.Literal('LoadBalancer')], {
        default: 'ClusterIP',
      }),
      port: Type.Integer({ minimum: 1, maximum: 65535, default: 80 }),
    }),
  ),
});

const Component = Type.Object({
  kind: Type.String(),
  name: Type.String(),
  ready: Type.Boolean(),
  reason: Type.String(),
  message: Type.String(),
});

export const MyAppStatus = Type.Object({
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(Conditions()),
  phase: Type.Optional(Phase()),
  components: Type.Optional(Type.Array(Component, { maxItems: 8 })),
  available: Type.Optional(Type.String({ description: 'ready/desired replicas of the application' })),
  url: Type.Optional(Type.String()),
});

export const MyApp = defineKind({
  group: GROUP,
  version: 'v1alpha1',
  kind: 'MyApp',
  plural: 'myapps',
  singular: 'myapp',
  shortNames: ['ma'],
  categories: ['regulon'],
  scope: 'Namespaced',
  description:
    'An application with its own Database and Cache, wired together through their binding Secrets.',
  spec: MyAppSpec,
  status: MyAppStatus,
  objectValidations: ChildNamingRules({
    kind: 'MyApp',
    maxLength: MAX_NAME_LENGTH,
    children: 'Database, Cache, Deployment and Service',
  }),
  printerColumns: [
    // Replicas, Ready, Status: the shape every Regulon kind shows (see packages/crd/src/shipped.test.ts).
    // Ready is the application's available/desired replicas, as `kubectl get deployment` shows it.
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'string', jsonPath: '.status.available' },
    { name: 'Status', type: 'string', jsonPath: '.status.phase' },
    { name: 'Database', type: 'string', jsonPath: '.status.conditions[?(@.type=="DatabaseReady")].reason' },
    { name: 'Cache', type: 'string', jsonPath: '.status.conditions[?(@.type=="CacheReady")].reason' },
    { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1 },
    { name: 'URL', type: 'string', jsonPath: '.status.url', priority: 1 },
    {
      name: 'Message',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].message',
      priority: 1,
    },
  ],
});

export type MyAppObject = KindObject<typeof MyApp>;
