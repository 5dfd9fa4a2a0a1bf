import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import {
  coversExactly,
  generateCA,
  generateServingCert,
  isSignedPair,
  msUntilExpiry,
  parseBundle,
} from './generate.ts';

const names = { dnsNames: ['hooks.ns.svc', 'hooks.ns.svc.cluster.local'], ipAddresses: ['127.0.0.1'] };

test('a serving certificate names the service and the loopback address, is signed by the CA, and expires when asked', async () => {
  const ca = await generateCA('regulon-webhook-ca', 3600_000);
  const serving = await generateServingCert(ca, names, 60_000);
  const caCert = new X509Certificate(ca.cert);
  const cert = new X509Certificate(serving.cert);
  assert.equal(caCert.ca, true);
  assert.equal(cert.ca, false);
  assert.ok(isSignedPair(serving, caCert));
  assert.ok(cert.checkIssued(caCert));
  assert.ok(coversExactly(cert, names));
  assert.equal(coversExactly(cert, { ...names, ipAddresses: [] }), false);
  assert.equal(cert.checkHost('hooks.ns.svc'), 'hooks.ns.svc');
  assert.equal(cert.checkIP('127.0.0.1'), '127.0.0.1');
  const left = msUntilExpiry(cert);
  assert.ok(left > 55_000 && left <= 60_000, `expires in ${left} ms`);
});

test('a certificate from another CA, or with another key, is no signed pair', async () => {
  const ca = await generateCA('a', 3600_000);
  const other = await generateCA('b', 3600_000);
  const serving = await generateServingCert(ca, names, 60_000);
  const stranger = await generateServingCert(other, names, 60_000);
  assert.equal(isSignedPair(serving, new X509Certificate(other.cert)), false);
  assert.equal(isSignedPair({ cert: serving.cert, key: stranger.key }, new X509Certificate(ca.cert)), false);
});

test('a bundle of two CAs parses to both, in order; garbage between them is skipped', async () => {
  const a = await generateCA('first', 3600_000);
  const b = await generateCA('second', 3600_000);
  const bundle = parseBundle(`${a.cert}junk\n${b.cert}`);
  assert.deepEqual(
    bundle.map((c) => c.subject),
    ['CN=first', 'CN=second'],
  );
});
