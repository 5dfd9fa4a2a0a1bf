// The README's quick start on a machine that runs the real node, as a test:
// `npm start` on a fresh cluster directory joins the real node, starts the
// embedded object store, and ends with the real sample's engine Pods Ready (a
// MyApp on the local app image, its 3-instance postgres with backups to the
// store and its replicated redis); then the psql commands it printed (the
// kubectl plugin's and kubectl exec's), run as printed, answer from the
// primary, which streams to both replicas.
//
// The machine has one real node, which `npm test`'s own control plane takes
// once a test asks for it: so `npm test` runs this file in a step of its own,
// before the projects' tests (tools/scripts/test.ts), and inside the projects'
// run (REGULON_TESTENV_DIR set) it is skipped.
//   node --test tools/scripts/start-real.test.ts
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { realNodeUnsupported } from '@regulon/testenv';
import { freePort } from '../../packages/testenv/src/ports.ts';

const root = join(import.meta.dirname, '..', '..');
const skip = process.env['REGULON_TESTENV_DIR']
  ? "the run's control plane has the machine's real node: npm test runs this file in a step of its own"
  : realNodeUnsupported();

test(
  'npm start on the real node: real engine Pods Ready, and the printed psql works',
  { skip },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'regulon-start-real-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      REGULON_CLUSTER_DIR: dir,
      REGULON_METRICS_BIND_ADDRESS: `127.0.0.1:${await freePort()}`,
      REGULON_HEALTH_PROBE_BIND_ADDRESS: `127.0.0.1:${await freePort()}`,
    };
    const run = (cmd: string, args: string[], input?: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(cmd, args, {
          env,
          cwd: root,
          stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        });
        if (input !== undefined) child.stdin!.end(input);
        let out = '';
        child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', (code) => resolve({ code, out })); // 'close': output read to the end
      });
    try {
      const begun = Date.now();
      const started = await run(process.execPath, [
        join(import.meta.dirname, 'start.ts'),
        '--exit-when-ready',
      ]);
      const tail = started.out.slice(-4000);
      assert.equal(started.code, 0, tail);
      t.diagnostic(`npm start to real Ready: ${((Date.now() - begun) / 1000).toFixed(0)} s`);
      assert.match(started.out, /Everything is Ready, on real engines/, tail);
      assert.doesNotMatch(started.out, /Simulated start/);
      // kubectl get myapp,database,cache,pods as printed: the MyApp and its children Ready, every Pod running.
      assert.match(started.out, /myapp\.regulon\.dev\/shop\s+1\s+1\/1\s+Ready\s+Ready\s+Ready/, tail);
      assert.match(started.out, /database\.regulon\.dev\/shop-db\s+postgres\s+\S+\s+3\s+3\s+Ready/, tail);
      assert.match(started.out, /cache\.regulon\.dev\/shop-cache\s+redis\s+\S+\s+2\s+2\s+Ready/, tail);
      for (const pod of ['shop-db-0', 'shop-db-1', 'shop-db-2', 'shop-cache-0', 'shop-cache-1'])
        assert.match(started.out, new RegExp(`pod/${pod}\\s+\\d/\\d\\s+Running`), tail);

      // The printed commands, as a user pastes them: the environment line, then psql (stdin a pipe here).
      const lines = started.out.split('\n').map((l) => l.trim());
      const exported = lines.find((l) => l.startsWith('export KUBECONFIG='));
      const psqls = lines.filter((l) => /^npx kubectl-regulon psql |^kubectl .* exec -it .* psql /.test(l));
      assert.ok(exported && psqls.length === 2, tail);
      for (const psql of psqls) {
        const answer = await run(
          'bash',
          ['-c', `${exported}\n${psql}`],
          'select count(*) from pg_stat_replication;\n',
        );
        assert.equal(answer.code, 0, `${psql}\n${answer.out}`);
        // The primary answers, and streams to its two replicas.
        assert.match(answer.out, /^\s*count\s*\n-+\n\s*2\n\(1 row\)/m, `${psql}\n${answer.out}`);
      }
    } finally {
      await run(process.execPath, [join(root, 'packages', 'testenv', 'src', 'cli.ts'), 'down']);
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
