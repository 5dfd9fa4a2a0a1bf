import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quantityValue } from './quantity.ts';

test('quantityValue reads every form of the resource.Quantity grammar, in bytes', () => {
  assert.equal(quantityValue('256Mi'), 256 * 2 ** 20);
  assert.equal(quantityValue('1Gi'), 2 ** 30);
  assert.equal(quantityValue('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(quantityValue('500M'), 500e6);
  assert.equal(quantityValue('1k'), 1000);
  assert.equal(quantityValue('2e9'), 2e9);
  assert.equal(quantityValue('3E2'), 300);
  assert.equal(quantityValue('1E'), 1e18, 'E alone is exa, not an exponent');
  assert.equal(quantityValue('268435456'), 268435456);
  assert.equal(quantityValue(268435456), 268435456);
  assert.equal(quantityValue('.5Ki'), 512);
  assert.equal(quantityValue('1500m'), 2, 'fractions of a byte round up');
});

test('quantityValue refuses what is not a quantity', () => {
  for (const bad of ['', 'Mi', '1MB', '1 Gi', '1Gii', 'abc'])
    assert.throws(() => quantityValue(bad), /not a quantity/);
});
