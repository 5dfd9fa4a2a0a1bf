import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

/**
 * Generates the PKI of a throwaway control plane: a CA, the API server's
 * serving certificate (loopback and in-cluster names), a cluster-admin client
 * certificate (group system:masters) and the service-account signing keys.
 *
 * Node's crypto can make keys but not X.509 certificates, and no small,
 * well-kept npm package does CA signing with SANs better than the openssl CLI
 * that every Debian machine has, so this shells out to it.
 */
export async function generatePki(dir: string): Promise<Pki> {
  const p = (name: string) => join(dir, name);
  const pki: Pki = {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('apiserver.crt'),
    servingKey: p('apiserver.key'),
    adminCert: p('admin.crt'),
    adminKey: p('admin.key'),
    serviceAccountKey: p('sa.key'),
    serviceAccountPub: p('sa.pub'),
  };
  await generateCa(pki, '/CN=regulon-testenv-ca');
  await signed(pki, pki.servingKey, pki.servingCert, '/CN=kube-apiserver', [
    'subjectAltName=DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,' +
      'DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.0.0.1',
    'extendedKeyUsage=serverAuth',
  ]);
  await signed(pki, pki.adminKey, pki.adminCert, '/O=system:masters/CN=regulon-admin', [
    'extendedKeyUsage=clientAuth',
  ]);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(pki.serviceAccountKey, privateKey.export({ type: 'pkcs1', format: 'pem' }), {
    mode: 0o600,
  });
  await writeFile(pki.serviceAccountPub, publicKey.export({ type: 'spki', format: 'pem' }));
  return pki;
}

/** A CA certificate and its key, the signer of {@link signed} certificates. */
export interface CertificateAuthority {
  caCert: string;
  caKey: string;
}

async function generateCa(ca: CertificateAuthority, subject: string): Promise<void> {
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    ca.caKey,
    '-out',
    ca.caCert,
    '-days',
    '365',
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
}

export interface ServingPki extends CertificateAuthority {
  servingCert: string;
  servingKey: string;
}

/**
 * A CA of its own and a server certificate it signed, for a service testenv
 * runs beside the control plane (the object store): clients are given the CA
 * and verify the server the way they would a real one, by name or address.
 */
export async function generateServingPki(
  dir: string,
  name: string,
  subjectAltNames: { dns?: string[]; ips?: string[] },
): Promise<ServingPki> {
  const p = (file: string) => join(dir, file);
  const pki: ServingPki = {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p(`${name}.crt`),
    servingKey: p(`${name}.key`),
  };
  await generateCa(pki, `/CN=regulon-testenv-${name}-ca`);
  const sans = [
    ...(subjectAltNames.dns ?? []).map((d) => `DNS:${d}`),
    ...(subjectAltNames.ips ?? []).map((ip) => `IP:${ip}`),
  ];
  await signed(pki, pki.servingKey, pki.servingCert, `/CN=${name}`, [
    `subjectAltName=${sans.join(',')}`,
    'extendedKeyUsage=serverAuth',
  ]);
  return pki;
}

async function signed(
  pki: CertificateAuthority,
  key: string,
  cert: string,
  subject: string,
  extensions: string[],
): Promise<void> {
  const csr = cert.replace(/\.crt$/, '.csr');
  const ext = cert.replace(/\.crt$/, '.ext');
  await writeFile(
    ext,
    ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', ...extensions].join(
      '\n',
    ) + '\n',
  );
  await run('openssl', [
    'req',
    '-new',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    key,
    '-out',
    csr,
    '-subj',
    subject,
  ]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    pki.caCert,
    '-CAkey',
    pki.caKey,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    '365',
    '-extfile',
    ext,
  ]);
}
