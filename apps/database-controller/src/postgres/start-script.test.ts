import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { renderHba, renderStartScript, slotName } from './start-script.ts';

describe('postgres start script', () => {
  const script = renderStartScript();

  test('is valid bash (the TypeScript template escapes nothing it should not)', () => {
    execFileSync('bash', ['-n'], { input: script });
    assert.match(script, /regulon_\$\{POD_NAME\/\/-\/_\}/, "bash's own substitution survives the template");
  });

  test('passwords never reach a command line: only files, a pwfile stream and psql variables read them', () => {
    const uses = script.split('\n').filter((l) => /\$\{?(SUPERUSER_PASSWORD|REPLICATION_PASSWORD)/.test(l));
    assert.deepEqual(
      uses.map((l) => l.trim()),
      [
        `printf '*:*:*:%s:%s\\n' 'regulon_replication' "$REPLICATION_PASSWORD" > "$PGPASSFILE"`,
        `initdb -D "$PGDATA.new" -U "$SUPERUSER" --pwfile=<(printf '%s' "$SUPERUSER_PASSWORD") \\`,
      ],
    );
    assert.match(script, /\\getenv replication_password REPLICATION_PASSWORD/);
  });

  test('only the named primary initialises, and only a never-initialised Database; everything else starts as a standby', () => {
    assert.match(script, /if designated && ! initialized; then\n\s+initialize\n\s+role=primary/);
    assert.match(script, /elif designated && ! writable_peer; then\n\s+role=primary/);
    assert.match(script, /role=standby\n/);
    assert.match(script, /touch "\$PGDATA\/standby.signal"/);
  });

  test('slot names are valid replication slot names for any Pod name', () => {
    assert.equal(slotName('orders-db-12'), 'regulon_orders_db_12');
    assert.match(slotName('a'.repeat(45) + '-4'), /^[a-z0-9_]{1,63}$/);
  });

  test('pg_hba.conf: scram over TCP, replication only for the replication role', () => {
    assert.deepEqual(renderHba().trim().split('\n'), [
      'local all all trust',
      'host replication regulon_replication all scram-sha-256',
      'host all all all scram-sha-256',
    ]);
  });
});
