import { X509Certificate, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import type * as X509 from '@peculiar/x509';

/**
 * Node's crypto reads, verifies and signs X.509 certificates but cannot make
 * one. @peculiar/x509 makes them over WebCrypto (Node's own crypto.subtle,
 * so keys and signatures come from OpenSSL, not from JavaScript arithmetic),
 * is typed, small, and maintained alongside PKI.js by Peculiar Ventures;
 * node-forge would sign in pure JavaScript and only with RSA. It needs a
 * Reflect metadata polyfill (its dependency injection, tsyringe), so both are
 * loaded on first use: a manager without webhooks never loads either.
 */
let x509: Promise<typeof X509> | undefined;
function loadX509(): Promise<typeof X509> {
  x509 ??= (async () => {
    await import('reflect-metadata');
    const lib = await import('@peculiar/x509');
    lib.cryptoProvider.set(webcrypto as unknown as Parameters<typeof lib.cryptoProvider.set>[0]);
    return lib;
  })();
  return x509;
}

/** PEM certificate and PKCS#8 PEM private key. */
export interface KeyPair {
  cert: string;
  key: string;
}

/** ECDSA P-256: as strong as RSA-3072 for a fraction of the key and handshake cost; Go's TLS (the API server) accepts it. */
const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
/** Clock skew between this process and the API server must not make a fresh certificate "not yet valid". */
const BACKDATE_MS = 60 * 60_000;

function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0]! &= 0x7f; // positive, as RFC 5280 requires
  return bytes.toString('hex');
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

async function importPrivateKey(pem: string): Promise<webcrypto.CryptoKey> {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return webcrypto.subtle.importKey('pkcs8', der, ALGORITHM, true, ['sign']);
}

/** A self-signed CA that signs serving certificates only (path length 0). */
export async function generateCA(commonName: string, validityMs: number, now = Date.now()): Promise<KeyPair> {
  const lib = await loadX509();
  const keys = await generateKeys();
  const cert = await lib.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=${commonName}`,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + validityMs),
    keys,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new lib.BasicConstraintsExtension(true, 0, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign, true),
      await lib.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await privateKeyPem(keys.privateKey) };
}

/** What a serving certificate is for: the names clients dial. */
export interface ServingNames {
  dnsNames: readonly string[];
  ipAddresses: readonly string[];
}

/** A serving certificate for `names`, signed by `ca`. */
export async function generateServingCert(
  ca: KeyPair,
  names: ServingNames,
  validityMs: number,
  now = Date.now(),
): Promise<KeyPair> {
  const lib = await loadX509();
  const keys = await generateKeys();
  const caCert = new lib.X509Certificate(ca.cert);
  const commonName = names.dnsNames[0] ?? names.ipAddresses[0] ?? 'webhook';
  const cert = await lib.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: `CN=${commonName}`,
    issuer: caCert.subject,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + validityMs),
    publicKey: keys.publicKey,
    signingKey: await importPrivateKey(ca.key),
    signingAlgorithm: ALGORITHM,
    extensions: [
      new lib.BasicConstraintsExtension(false, undefined, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature, true),
      new lib.ExtendedKeyUsageExtension([lib.ExtendedKeyUsage.serverAuth]),
      new lib.SubjectAlternativeNameExtension([
        ...names.dnsNames.map((value) => ({ type: 'dns' as const, value })),
        ...names.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ]),
      await lib.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return { cert: cert.toString('pem') + '\n', key: await privateKeyPem(keys.privateKey) };
}

/** The certificates of a PEM bundle, in order (unparseable blocks skipped). */
export function parseBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.flatMap((block) => {
    try {
      return [new X509Certificate(block)];
    } catch {
      return [];
    }
  });
}

/** Milliseconds until `cert` expires (negative once it has). */
export function msUntilExpiry(cert: X509Certificate, now = Date.now()): number {
  return Date.parse(cert.validTo) - now;
}

/** Whether `cert` names exactly `names` (order aside) in its subjectAltName. */
export function coversExactly(cert: X509Certificate, names: ServingNames): boolean {
  const sans = (cert.subjectAltName ?? '').split(', ').filter(Boolean).sort();
  const want = [
    ...names.dnsNames.map((n) => `DNS:${n}`),
    ...names.ipAddresses.map((ip) => `IP Address:${ip}`),
  ].sort();
  return sans.length === want.length && sans.every((s, i) => s === want[i]);
}

/** `pair` is a certificate with its own private key, signed by `ca`. */
export function isSignedPair(pair: KeyPair, ca: X509Certificate): boolean {
  try {
    const cert = new X509Certificate(pair.cert);
    return cert.checkPrivateKey(createPrivateKey(pair.key)) && cert.verify(ca.publicKey);
  } catch {
    return false;
  }
}
