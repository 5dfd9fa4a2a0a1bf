// `npm test`'s last step: every project's tests in two lanes at once, inside
// `regulon-testenv exec` (REGULON_TESTENV_DIR names the run's control plane).
//   real-node      the files that run Pods on the machine's one real node
//                  (node-test.ts --real-node), against the run's control plane,
//                  which holds that node; one project at a time (nx.json's
//                  parallel: 1), as their fault scenarios were timed
//   control-plane  every other file, against a control plane of its own, at a
//                  lower CPU priority (nice 10): these tests stop their API server,
//                  install cluster-wide webhooks and managers, and type-check
//                  and pack, and on a 2-core machine the real-node lane's
//                  fault scenarios must keep their timing
// One lane after the other took the whole run's length; side by side, the
// control-plane lane fits in the time the real-node lane waits on engines.
import { join } from 'node:path';
import { run } from './run.ts';

const root = join(import.meta.dirname, '..', '..');
const STATE_DIR_ENV = 'REGULON_TESTENV_DIR';
const shared = process.env[STATE_DIR_ENV];
if (!shared) throw new Error(`test-lanes.ts runs inside \`regulon-testenv exec\` (${STATE_DIR_ENV} unset)`);

const nx = ['npx', 'nx', 'run-many', '--outputStyle=stream', '-t', 'test', '--skipNxCache'];

async function lane(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const started = performance.now();
  const code = await run(cmd, args, { ...env, REGULON_TEST_LANE: name });
  const took = ((performance.now() - started) / 1000).toFixed(0);
  console.log(`\n=== lane ${name}: ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${took} s`);
  return code;
}

const { [STATE_DIR_ENV]: _dir, KUBECONFIG: _kubeconfig, ...withoutControlPlane } = process.env;
const codes = await Promise.all([
  lane('real-node', nx[0]!, nx.slice(1), process.env),
  lane('control-plane', 'nice', ['-n', '10', 'regulon-testenv', 'exec', '--', ...nx], {
    ...withoutControlPlane,
    // The one test of this lane that needs a real Pod (the packed testenv's) asks the other lane's node.
    REGULON_REAL_NODE_TESTENV_DIR: shared,
    // Two nx processes at once: each keeps its project graph and task history apart.
    NX_WORKSPACE_DATA_DIRECTORY: join(root, '.nx', 'workspace-data-control-plane'),
  }),
]);
process.exit(codes.find((c) => c !== 0) ?? 0);
