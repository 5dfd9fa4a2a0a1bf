import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, test } from 'node:test';
import { run } from './cli.ts';
import { COMMAND_HELP, USAGE } from './help.ts';

/** `kubectl regulon ARGS` without an API server: what it prints and its exit code. */
async function kubectl(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { out: (t) => (stdout += t), err: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

describe('run', () => {
  test('--help prints the usage on stdout and exits 0; a command has its own', async () => {
    assert.deepEqual(await kubectl('--help'), { code: 0, stdout: `${USAGE}\n`, stderr: '' });
    assert.deepEqual(await kubectl('switchover', '--help'), {
      code: 0,
      stdout: `${COMMAND_HELP.switchover}\n`,
      stderr: '',
    });
  });

  test('restore, psql, mysql, redis-cli and report have their own --help, listed in the usage', async () => {
    for (const command of ['restore', 'psql', 'mysql', 'redis-cli', 'report']) {
      assert.deepEqual(await kubectl(command, '--help'), {
        code: 0,
        stdout: `${COMMAND_HELP[command]}\n`,
        stderr: '',
      });
      assert.match(USAGE, new RegExp(`\n  ${command} `));
    }
    assert.match(COMMAND_HELP['psql']!, /the kubectl on PATH/);
  });

  test('a usage error exits 2 with one line on stderr and nothing on stdout', async () => {
    assert.deepEqual(await kubectl('status', 'db'), {
      code: 2,
      stdout: '',
      stderr: 'error: status: missing NAME (see --help)\n',
    });
  });

  test('a kubeconfig that is not there exits 1 with one line, no stack', async () => {
    const missing = join(tmpdir(), 'kubectl-regulon-no-such-kubeconfig');
    const { code, stdout, stderr } = await kubectl('status', 'db', 'orders', '--kubeconfig', missing);
    assert.equal(code, 1);
    assert.equal(stdout, '');
    assert.match(stderr, /^error: could not load kubeconfig .*no-such-kubeconfig.*\n$/);
  });
});
