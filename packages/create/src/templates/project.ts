// The files of a new project, before it has a kind. The TypeScript ones run
// as they are with Node's type stripping (no build step): the Dockerfile runs
// src/main.ts, and `npm test` type-checks, checks the generated deploy/ and
// runs the tests against testenv's control plane.
import { PROJECT_NODE_ENGINES, projectDependencies } from '../dependencies.ts';

/** Where `regulon create api` adds a kind's import and entry: kept on their own lines. */
export const MARKERS = {
  kindImports: '// regulon:scaffold:kind-imports',
  kinds: '// regulon:scaffold:kinds',
  controllerImports: '// regulon:scaffold:controller-imports',
  controllers: '// regulon:scaffold:controllers',
} as const;

export interface ProjectOptions {
  name: string;
  /** The @regulon packages' local tarballs (name → `file:` spec), before they are on the registry. */
  local?: ReadonlyMap<string, string> | undefined;
}

/** `my-operator` → `MY_OPERATOR`: the prefix of the manager's environment variables. */
export const envPrefix = (name: string) => name.toUpperCase().replaceAll('-', '_');

export function projectFiles({ name, local }: ProjectOptions): Map<string, string> {
  const files = new Map<string, string>();
  files.set(
    'package.json',
    `${JSON.stringify(
      {
        name,
        version: '0.1.0',
        private: true,
        type: 'module',
        engines: { node: PROJECT_NODE_ENGINES },
        scripts: {
          start: 'node src/main.ts',
          generate: 'regulon-generate',
          test: "tsc && regulon-generate --check && regulon-testenv exec -- node --test 'src/**/*.test.ts'",
        },
        ...projectDependencies(local),
      },
      null,
      2,
    )}\n`,
  );
  files.set(
    'tsconfig.json',
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'es2023',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          types: ['node'],
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          // Node runs the sources as they are: imports name the .ts files, and only
          // syntax that type stripping can erase is allowed.
          noEmit: true,
          allowImportingTsExtensions: true,
          verbatimModuleSyntax: true,
          erasableSyntaxOnly: true,
          skipLibCheck: true,
        },
        include: ['src', 'regulon.config.ts'],
      },
      null,
      2,
    )}\n`,
  );
  files.set('.gitignore', 'node_modules/\n');
  files.set('.dockerignore', 'node_modules/\ndeploy/\n**/*.test.ts\n');
  files.set('regulon.config.ts', regulonConfig(name));
  files.set('src/controller.ts', CONTROLLER_TYPE);
  files.set('src/kinds.ts', KINDS);
  files.set('src/controllers.ts', CONTROLLERS);
  files.set('src/main.ts', mainTs(name));
  files.set('Dockerfile', dockerfile());
  files.set('README.md', readme(name));
  return files;
}

const regulonConfig = (
  name: string,
) => `// What \`npm run generate\` (regulon-generate) writes into deploy/: a CRD per kind,
// RBAC from what the controllers declare, and the manager's kustomize base.
import { defineConfig } from '@regulon/generate';
import { CONTROLLERS } from './src/controllers.ts';
import { KINDS } from './src/kinds.ts';

export default defineConfig({
  kinds: KINDS,
  rbac: { rules: CONTROLLERS.map((c) => ({ name: c.name, rules: c.rbac })) },
  manager: { name: '${name}', namespace: '${name}-system', image: '${name}:0.1.0' },
});
`;

export const CONTROLLER_TYPE = `import type { Manager } from '@regulon/runtime';

/** One controller of the manager: its name (and flags), what it may do to the API, and how it is wired. */
export interface Controller {
  /** kebab-case: --<name>-enabled and --<name>-concurrency switch it. */
  readonly name: string;
  /** Exactly what it does to the API: deploy/rbac is generated from these. */
  readonly rbac: ReadonlyArray<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
  setup(mgr: Manager, options: { maxConcurrentReconciles: number }): void;
}
`;

const KINDS = `// The kinds this operator serves: a CRD each in deploy/crds.
${MARKERS.kindImports}

export const KINDS = [
  ${MARKERS.kinds}
] as const;
`;

const CONTROLLERS = `// The controllers src/main.ts runs, each behind its own --<name>-enabled flag.
import type { Controller } from './controller.ts';
${MARKERS.controllerImports}

export const CONTROLLERS: readonly Controller[] = [
  ${MARKERS.controllers}
];
`;

const dockerfile = () => `# The manager's image: production dependencies only, non-root, TypeScript run
# by Node's own type stripping.
FROM node:24-bookworm-slim
# tini as PID 1 forwards SIGTERM to node, which drains its reconciles and
# releases its Lease; node as PID 1 would ignore a signal that comes before
# its handlers are installed.
RUN apt-get update \\
  && apt-get install -y --no-install-recommends tini \\
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY src ./src
# The user deploy/'s Deployment runs it as (runAsUser): any non-root UID reads
# the root-owned files.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/usr/bin/tini", "--", "node", "src/main.ts"]
`;

const readme = (name: string) => `# ${name}

A Kubernetes operator on [Regulon](https://www.npmjs.com/package/@regulon/runtime).

\`\`\`sh
npx regulon create api --group example.com --version v1alpha1 --kind MyKind   # a kind, its controller and its test
npm run generate    # deploy/: CRDs, RBAC, the manager's Deployment
npm test            # type-check, deploy/ current, tests against a real control plane
npm start           # the manager against your current kubeconfig (--help lists the flags)
\`\`\`

The first \`npm test\` needs the control plane's binaries: \`npx regulon-testenv install\`
builds them from the Go module proxy once (Go on PATH) and caches them.

Deploy: build the image from the Dockerfile, set it in \`deploy/\` (a kustomize
overlay's \`images:\`), then \`kubectl apply --server-side -k deploy/\`.
`;

function mainTs(name: string): string {
  return `// The operator's manager: the controllers of src/controllers.ts in one process,
// with the standard flags (node src/main.ts --help lists them).
import { KubeClient } from '@regulon/client';
import {
  controllerOptions,
  defineOptions,
  enabledControllers,
  managerOptions,
  managerSettings,
  runCli,
} from '@regulon/options';
import { Manager, createLogger, logUnhandledRejections, stopOnSignals } from '@regulon/runtime';
import { Registry } from 'prom-client';
import { CONTROLLERS } from './controllers.ts';

const OPTIONS = defineOptions({
  ...managerOptions({ envPrefix: '${envPrefix(name)}', leaderElectionId: '${name}' }),
  ...controllerOptions(CONTROLLERS.map((c) => c.name), { envPrefix: '${envPrefix(name)}' }),
});

const config = runCli(OPTIONS, { program: '${name}', summary: 'Runs the ${name} controllers.' });
const { kubeconfigPath, qps, burst, ...settings } = managerSettings(config);
const registry = new Registry();
const mgr = new Manager({
  ...settings,
  client: KubeClient.load({ kubeconfigPath, qps, burst, registry }),
  registry,
  logger: createLogger({ level: config.logLevel, name: '${name}' }),
});
for (const { controller, concurrency } of enabledControllers(config, CONTROLLERS))
  controller.setup(mgr, { maxConcurrentReconciles: concurrency });
logUnhandledRejections(mgr.logger);
stopOnSignals(mgr);
await mgr.start();
`;
}
