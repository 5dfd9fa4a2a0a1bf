import assert from 'node:assert/strict';
import { test } from 'node:test';
import { controllerOptions, enabledControllers } from './controller-options.ts';
import { loadConfig } from './load.ts';

test('a controller named with a digit after a hyphen (redis-2) is switched on and off by its own flags', () => {
  const controllers = [{ name: 'database' }, { name: 'redis-2' }, { name: 'my-app-v2' }];
  const spec = controllerOptions(controllers.map((c) => c.name));
  const enabled = (argv: string[]) => {
    const loaded = loadConfig(spec, { argv, env: {} });
    if (loaded.help) throw new Error('unexpected --help');
    return enabledControllers(loaded.config, controllers).map((e) => [e.controller.name, e.concurrency]);
  };
  assert.deepEqual(enabled(['--redis-2-concurrency=3']), [
    ['database', 1],
    ['redis-2', 3],
    ['my-app-v2', 1],
  ]);
  assert.deepEqual(enabled(['--no-redis-2-enabled', '--no-database-enabled']), [['my-app-v2', 1]]);
});
