import { execFileSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderStartScript } from './start-script.ts';

// The script ran on real MariaDB 10.11 Pods by hand (not yet from the controller:
// the engine is not wired in); this keeps what ships at least valid bash.
describe('mariadb start script', () => {
  for (const synchronous of [false, true])
    test(`is valid bash (synchronous ${synchronous})`, () => {
      const script = renderStartScript({ synchronous });
      execFileSync('bash', ['-n'], { input: script });
      assert.doesNotMatch(script, /--password=|-p"\$/, 'no password on a command line');
    });
});
