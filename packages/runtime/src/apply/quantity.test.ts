import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalQuantity, quantityValue } from './quantity.ts';

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

// The values below are what kube-apiserver 1.37 answered (quantity.integration.test.ts
// checks them against a real one); negatives follow apimachinery's code, as no field takes them.
test('canonicalQuantity spells a quantity as the API server stores it', () => {
  const cases: Array<[string | number, string]> = [
    // Binary: the largest power of 1024 that divides the value; below 1024 or not whole, decimal.
    ['1024Mi', '1Gi'],
    ['0.5Gi', '512Mi'],
    ['1.5Gi', '1536Mi'],
    ['1048576Ki', '1Gi'],
    ['8Ki', '8Ki'],
    ['1.5Ki', '1536'],
    ['0.5Ki', '512'],
    ['0.0001Ki', '102400u'],
    ['1.0000000001Ki', '1024000000103n'],
    ['9Ei', '9223372036854775807'],
    // Decimal and none: trailing zeros become an exponent, rounded down to a multiple of 3.
    ['1000m', '1'],
    ['1500m', '1500m'],
    ['0.1', '100m'],
    ['1.50', '1500m'],
    ['2000', '2k'],
    ['1500', '1500'],
    ['1073741824', '1073741824'],
    [1073741824, '1073741824'],
    ['0.001G', '1M'],
    // Exponents stay exponents, unless the exponent is 0.
    ['1e3', '1e3'],
    ['1e1', '10'],
    ['1.5e3', '1500'],
    // Finer than nano rounds up, away from zero.
    ['0.1n', '1n'],
    ['1e-20', '1e-9'],
    ['-0.1n', '-1n'],
    ['-1024Mi', '-1Gi'],
    ['0Gi', '0'],
    ['0m', '0'],
    // A spelling apimachinery's int64 fast path deems canonical is kept as written.
    ['01', '01'],
    ['+1', '+1'],
    ['+1Gi', '+1Gi'],
    ['5.', '5.'],
    ['1.500', '1.500'],
    ['12.000', '12'],
  ];
  for (const [q, want] of cases) assert.equal(canonicalQuantity(q), want, String(q));
});

test('canonicalQuantity with milli rounds up to milli, as the core API defaults every ResourceList value', () => {
  const cases: Array<[string, string]> = [
    ['1u', '1m'],
    ['0.1n', '1m'],
    ['1000000n', '1m'],
    ['0.0001Ki', '103m'],
    ['1.0000000001Ki', '1024001m'],
    ['-1u', '-1m'],
    ['1024Mi', '1Gi'],
    ['1500m', '1500m'],
    ['1.500', '1.500'],
  ];
  for (const [q, want] of cases) assert.equal(canonicalQuantity(q, { milli: true }), want, q);
});

test('canonicalQuantity gives no spelling for what is not a quantity, or what the API server misstates', () => {
  for (const bad of ['', 'Mi', '1MB', '1 Gi', '1Gii', 'abc', 'none', '1.2.3', NaN, Infinity])
    assert.equal(canonicalQuantity(bad), undefined, String(bad));
  assert.equal(canonicalQuantity('1000E'), undefined, 'no suffix past E: apimachinery would print 1');
});
