// What the TypeBox schemas accept, at the edges where a lenient conversion
// would quietly turn a typo into a value: each case goes through loadConfig,
// from a flag (always text) or a JSON file (typed values).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, defineOptions, loadConfig } from './index.ts';

const spec = defineOptions({
  count: { flag: 'count', env: 'T_COUNT', type: 'integer', description: 'An integer.' },
  ratio: { flag: 'ratio', env: 'T_RATIO', type: 'number', description: 'A number.' },
  wait: { flag: 'wait', env: 'T_WAIT', type: 'duration', description: 'A duration.' },
  on: { flag: 'on', env: 'T_ON', type: 'boolean', description: 'A boolean.' },
  label: { flag: 'label', env: 'T_LABEL', type: 'string', description: 'A string.' },
  mode: { flag: 'mode', env: 'T_MODE', type: 'enum', values: ['a', 'b'], description: 'An enum.' },
});

const dir = mkdtempSync(join(tmpdir(), 'regulon-schema-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The value, or the reason it was refused, of one option given by flag text or as a JSON file value. */
function read(key: keyof typeof spec, given: { flag: string } | { file: unknown }): unknown {
  const argv = ['flag' in given ? `--${spec[key].flag}=${given.flag}` : ''];
  if ('file' in given) {
    const path = join(dir, `config-${++files}.json`);
    writeFileSync(path, JSON.stringify({ [key]: given.file }));
    argv[0] = `--config=${path}`;
  }
  try {
    const result = loadConfig(spec, { argv, env: {} });
    if (result.help) throw new Error('unexpected --help');
    return result.config[key];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message.match(/: (not [^(]*?|out of range) \(/)?.[1] ?? err.message;
  }
}

test('integer text is digits with an optional sign: no empty, hex, exponent, fraction or padded text', () => {
  assert.equal(read('count', { flag: '+7' }), 7);
  assert.equal(read('count', { flag: '-3' }), -3);
  for (const text of ['', '0x10', '1e3', '1.5', ' 5', 'true', 'Infinity']) {
    assert.equal(read('count', { flag: text }), 'not an integer', JSON.stringify(text));
  }
});

test('integers beyond 2^53 are not integers, as text or in a file', () => {
  assert.equal(read('count', { flag: '9007199254740991' }), Number.MAX_SAFE_INTEGER);
  assert.equal(read('count', { flag: '99999999999999999999' }), 'not an integer');
  assert.equal(read('count', { file: 2 ** 60 }), 'not an integer');
});

test('number text is decimal: no empty, hex, Infinity or NaN', () => {
  assert.equal(read('ratio', { flag: '-.5e2' }), -50);
  for (const text of ['', '0x10', 'Infinity', 'NaN', '1,5']) {
    assert.equal(read('ratio', { flag: text }), 'not a number', JSON.stringify(text));
  }
});

test('a duration is whole, non-negative milliseconds, however it is written', () => {
  assert.equal(read('wait', { flag: '1h1ms' }), 3_600_001);
  assert.equal(read('wait', { file: '2s' }), 2000);
  assert.equal(read('wait', { file: 0 }), 0);
  for (const given of [{ flag: '1.5ms' }, { flag: '1e3' }, { file: -5 }, { file: 1.5 }, { file: true }]) {
    assert.equal(read('wait', given), 'not a duration', JSON.stringify(given));
  }
});

test('typed file values are taken as they are: no number is a string, boolean or enum value', () => {
  assert.equal(read('label', { file: 3 }), 'not a string');
  assert.equal(read('on', { file: 1 }), 'not a boolean');
  assert.equal(read('on', { file: 'No' }), false);
  assert.equal(read('mode', { file: 1 }), 'not one of the allowed values');
  assert.equal(read('mode', { flag: 'A' }), 'not one of the allowed values');
  assert.equal(read('count', { file: '12' }), 12);
  assert.equal(read('count', { file: true }), 'not an integer');
});
