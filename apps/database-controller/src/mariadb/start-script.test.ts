import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderStartScript } from './start-script.ts';

// The script runs on real MariaDB 10.11 Pods in the integration tests; this
// keeps what ships at least valid bash, with no password on a command line.
describe('mariadb start script', () => {
  for (const synchronous of [false, true])
    for (const restore of [false, true])
      test(`is valid bash (synchronous ${synchronous}, restore ${restore})`, () => {
        const script = renderStartScript({ synchronous, restore });
        execFileSync('bash', ['-n'], { input: script });
        assert.doesNotMatch(script, /--password=|-p"\$/, 'no password on a command line');
      });

  test('only a restored Database restores: the others render as before', () => {
    assert.doesNotMatch(renderStartScript({}), /fetch_backup|mariabackup --prepare/);
    const restore = renderStartScript({ restore: true });
    assert.match(restore, /fetch_backup "\$datadir\.new"/);
    assert.match(restore, /mariabackup --prepare/);
    // The restored data's accounts get this Database's passwords.
    assert.match(restore, /ALTER USER \$app IDENTIFIED BY/);
    assert.match(restore, /ALTER USER 'regulon_replication'@'%' IDENTIFIED BY/);
  });
});
