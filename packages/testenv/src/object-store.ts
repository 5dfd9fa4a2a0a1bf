// A real S3-compatible object store for tests: versitygw (tools/object-store)
// over its POSIX backend, serving HTTPS with a certificate of its own CA, so
// that backup tools (pgBackRest requires HTTPS) verify it the way they would
// verify a cloud provider's endpoint.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AwsV4Signer } from 'aws4fetch';
import { runBuildScript } from './binaries.ts';
import { generateServingPki } from './certs.ts';
import type { TestEnv } from './env.ts';
import { NODE_NETWORK } from './node-config.ts';
import { freePort } from './ports.ts';
import {
  delay,
  logTail,
  recordService,
  SERVICES_DIR,
  startComponent,
  stopRecordedService,
} from './process.ts';

/** versitygw's own default region; any name works, as long as clients sign for the same one. */
export const DEFAULT_OBJECT_STORE_REGION = 'us-east-1';
const DEFAULT_START_TIMEOUT_MS = 30_000;
/** An unauthenticated path versitygw answers 200 on once it serves (its `--health` flag). */
const HEALTH_PATH = '/health';

export interface ObjectStoreOptions {
  /**
   * Attach the store to this env's control plane: it is recorded under the
   * control plane's directory, and stopping the control plane (`env.stop()`
   * of the env that started it, the end of `regulon-testenv exec`,
   * `npm run cluster -- down`) stops it too, also when the test process that
   * started it died without calling `stop()`.
   */
  env?: TestEnv | undefined;
  /**
   * Also listen on the real node's address (`10.245.0.1`), where its Pods
   * reach this machine, and report `podEndpoint`. Default: whether `env` has
   * a real node. The address exists only while a real node runs.
   */
  reachableFromPods?: boolean | undefined;
  /** The region clients sign for (default `us-east-1`). */
  region?: string | undefined;
  log?: (line: string) => void;
  /** How long the server may take to answer, once the binary is at hand (default 30 s). */
  startTimeoutMs?: number | undefined;
}

export interface ObjectListing {
  key: string;
  size: number;
}

export interface S3Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface S3Request {
  method: string;
  bucket?: string | undefined;
  key?: string | undefined;
  query?: Record<string, string> | undefined;
  body?: string | Buffer | undefined;
  headers?: Record<string, string> | undefined;
  /** Sign with other credentials than the store's (to test refusals). */
  credentials?: { accessKeyId: string; secretAccessKey: string } | undefined;
}

/** An S3 error response: `code` is S3's error code (`NoSuchBucket`, `SignatureDoesNotMatch`, ...). */
export class S3Error extends Error {
  readonly status: number;
  readonly code: string;

  constructor(what: string, response: S3Response) {
    const xml = response.body.toString('utf8');
    const code = xmlText(xml, 'Code') ?? '';
    super(`${what}: HTTP ${response.status}${code ? ` ${code}` : ''}: ${xmlText(xml, 'Message') ?? ''}`);
    this.name = 'S3Error';
    this.status = response.status;
    this.code = code;
  }
}

export interface ObjectStore {
  /** `https://127.0.0.1:<port>`: for clients on this machine. Path-style: `<endpoint>/<bucket>/<key>`. */
  readonly endpoint: string;
  /** `https://10.245.0.1:<port>`: for the real node's Pods (with `reachableFromPods`). */
  readonly podEndpoint: string | undefined;
  readonly host: string;
  readonly port: number;
  /** The CA that signed the server's certificate (for `127.0.0.1`, `10.245.0.1`, `localhost`); clients must trust it. */
  readonly caPem: string;
  /** The same CA as a file, for tools that take a path (`pgbackrest --repo1-storage-ca-file`). */
  readonly caFile: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: string;
  /** The server's process (group leader); gone once `stop()` returns. */
  readonly pid: number;
  /** The POSIX backend's root: a bucket is a directory, an object a file. */
  readonly dataDir: string;
  createBucket(name: string): Promise<void>;
  putObject(bucket: string, key: string, body: string | Buffer): Promise<void>;
  getObject(bucket: string, key: string): Promise<Buffer>;
  /** Every object under `prefix` (all pages of ListObjectsV2), in key order. */
  listObjects(bucket: string, prefix?: string): Promise<ObjectListing[]>;
  /** A signed request as-is, for what the helpers above don't cover; never throws on an S3 error. */
  request(req: S3Request): Promise<S3Response>;
  /** Stops the server and deletes its data. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Returns the versitygw binary, built from the Go module proxy the first time
 * (tools/object-store/build.sh, one to two minutes on 2 cores) and
 * cached by version. REGULON_OBJECT_STORE_BIN points at a prebuilt directory instead.
 */
export async function ensureObjectStoreBinary(log: (line: string) => void = () => {}): Promise<string> {
  const dir =
    process.env['REGULON_OBJECT_STORE_BIN'] ??
    (await runBuildScript(['tools', 'object-store', 'build.sh'], log));
  return join(dir, 'versitygw');
}

/** Starts an S3-compatible object store on a free port, with generated root credentials. */
export async function startObjectStore(options: ObjectStoreOptions = {}): Promise<ObjectStore> {
  const log = options.log ?? (() => {});
  const bin = await ensureObjectStoreBinary(log);
  const deadline = Date.now() + (options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS);
  const reachableFromPods = options.reachableFromPods ?? options.env?.controlPlane.hasRealNode ?? false;
  if (reachableFromPods && !existsSync(`/sys/class/net/${NODE_NETWORK.bridge}`))
    throw new Error(
      `testenv: an object store reachable from Pods needs the real node's address ${NODE_NETWORK.nodeIP} ` +
        `(bridge ${NODE_NETWORK.bridge}), which exists only while a real node runs: start({ realNodes: 1 }) first`,
    );

  const dir = storeDir(options.env);
  try {
    for (const sub of ['data', 'pki', 'iam']) mkdirSync(join(dir, sub), { recursive: true });
    const addresses = ['127.0.0.1', NODE_NETWORK.nodeIP];
    const pki = await generateServingPki(join(dir, 'pki'), 'object-store', {
      // The addresses also as DNS names: pgBackRest 2.45 (Debian bookworm)
      // matches the host it connects to against DNS names only, and fails
      // "unable to find hostname '127.0.0.1' in certificate"; clients that do
      // match IP addresses use the IP entries.
      dns: ['localhost', ...addresses],
      ips: addresses,
    });
    // Shaped like AWS keys (20 upper-case characters, a 40-character secret)
    // and free of characters that need quoting in an env file or a pgBackRest config.
    const accessKeyId = randomBytes(10).toString('hex').toUpperCase();
    const secretAccessKey = randomBytes(30).toString('base64url');
    const region = options.region ?? DEFAULT_OBJECT_STORE_REGION;
    const port = await freePort();
    const listen = [`127.0.0.1:${port}`, ...(reachableFromPods ? [`${NODE_NETWORK.nodeIP}:${port}`] : [])];
    const args = [
      ...listen.map((address) => `--port=${address}`),
      `--cert=${pki.servingCert}`,
      `--key=${pki.servingKey}`,
      `--region=${region}`,
      `--health=${HEALTH_PATH}`,
      // Its own account store, even with the root user alone: without one,
      // versitygw answers an unknown access key with 404 XAdminUserNotFound
      // instead of S3's 403 InvalidAccessKeyId.
      `--iam-dir=${join(dir, 'iam')}`,
      'posix',
      join(dir, 'data'),
    ];
    // The root credentials go in the environment: `args` are recorded in the
    // state file and visible to anyone on the machine in the process list.
    const running = startComponent('object-store', bin, args, join(dir, 'object-store.log'), {
      ...process.env,
      ROOT_ACCESS_KEY_ID: accessKeyId,
      ROOT_SECRET_ACCESS_KEY: secretAccessKey,
    });
    recordService(dir, running.state);
    log(`started object store (pid ${running.state.pid}) on ${listen.join(', ')}`);

    const caPem = readFileSync(pki.caCert, 'utf8');
    const endpoint = `https://127.0.0.1:${port}`;
    const store = new RunningObjectStore({
      endpoint,
      podEndpoint: reachableFromPods ? `https://${NODE_NETWORK.nodeIP}:${port}` : undefined,
      host: '127.0.0.1',
      port,
      caPem,
      caFile: pki.caCert,
      accessKeyId,
      secretAccessKey,
      region,
      pid: running.state.pid,
      dataDir: join(dir, 'data'),
      dir,
    });

    let exited: number | null | undefined;
    void running.exited?.then((code) => (exited = code));
    for (;;) {
      if (exited !== undefined) {
        throw new Error(
          `testenv: the object store exited with ${exited} while starting:\n${logTail(running.state.log)}`,
        );
      }
      // Through TLS with the CA: ready means serving, with a certificate clients accept.
      const ready = await httpsGet(`${endpoint}${HEALTH_PATH}`, caPem).then(
        (status) => status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) {
        throw new Error(`testenv: timed out waiting for the object store:\n${logTail(running.state.log)}`);
      }
      await delay(50);
    }
    log(`object store ready at ${endpoint}`);
    return store;
  } catch (err) {
    await stopRecordedService(dir);
    throw err;
  }
}

function storeDir(env: TestEnv | undefined): string {
  if (!env) return mkdtempSync(join(tmpdir(), 'regulon-object-store-'));
  // Recorded as a service of the control plane: ControlPlane.stop() stops it.
  const root = join(env.controlPlane.state.dir, SERVICES_DIR);
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, 'object-store-'));
}

interface StoreFields {
  endpoint: string;
  podEndpoint: string | undefined;
  host: string;
  port: number;
  caPem: string;
  caFile: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  pid: number;
  dataDir: string;
  dir: string;
}

class RunningObjectStore implements ObjectStore {
  readonly endpoint: string;
  readonly podEndpoint: string | undefined;
  readonly host: string;
  readonly port: number;
  readonly caPem: string;
  readonly caFile: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly region: string;
  readonly pid: number;
  readonly dataDir: string;
  readonly #dir: string;

  constructor(f: StoreFields) {
    this.endpoint = f.endpoint;
    this.podEndpoint = f.podEndpoint;
    this.host = f.host;
    this.port = f.port;
    this.caPem = f.caPem;
    this.caFile = f.caFile;
    this.accessKeyId = f.accessKeyId;
    this.secretAccessKey = f.secretAccessKey;
    this.region = f.region;
    this.pid = f.pid;
    this.dataDir = f.dataDir;
    this.#dir = f.dir;
  }

  async createBucket(name: string): Promise<void> {
    await this.#ok(`creating bucket ${name}`, { method: 'PUT', bucket: name });
  }

  async putObject(bucket: string, key: string, body: string | Buffer): Promise<void> {
    await this.#ok(`putting ${bucket}/${key}`, { method: 'PUT', bucket, key, body });
  }

  async getObject(bucket: string, key: string): Promise<Buffer> {
    return (await this.#ok(`getting ${bucket}/${key}`, { method: 'GET', bucket, key })).body;
  }

  async listObjects(bucket: string, prefix = ''): Promise<ObjectListing[]> {
    const objects: ObjectListing[] = [];
    let continuation: string | undefined;
    do {
      const query: Record<string, string> = { 'list-type': '2', prefix };
      if (continuation !== undefined) query['continuation-token'] = continuation;
      const res = await this.#ok(`listing ${bucket}/${prefix}`, { method: 'GET', bucket, query });
      const body = res.body.toString('utf8');
      for (const contents of xmlElements(body, 'Contents')) {
        objects.push({ key: xmlText(contents, 'Key') ?? '', size: Number(xmlText(contents, 'Size') ?? 0) });
      }
      continuation =
        xmlText(body, 'IsTruncated') === 'true' ? xmlText(body, 'NextContinuationToken') : undefined;
    } while (continuation !== undefined);
    return objects;
  }

  async request(req: S3Request): Promise<S3Response> {
    const path =
      '/' +
      [req.bucket, req.key]
        .filter((p) => p !== undefined)
        .map(encodeS3Path)
        .join('/');
    const url = new URL(path, this.endpoint);
    for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
    const body = req.body === undefined ? undefined : Buffer.from(req.body);
    // aws4fetch signs; node:https sends, because fetch can't be given a CA per request.
    const signed = await new AwsV4Signer({
      method: req.method,
      url: url.toString(),
      headers: {
        ...req.headers,
        // The payload's hash, signed, rather than aws4fetch's UNSIGNED-PAYLOAD for S3: the server checks the body too.
        'x-amz-content-sha256': createHash('sha256')
          .update(body ?? '')
          .digest('hex'),
      },
      ...(body ? { body } : {}),
      accessKeyId: req.credentials?.accessKeyId ?? this.accessKeyId,
      secretAccessKey: req.credentials?.secretAccessKey ?? this.secretAccessKey,
      service: 's3',
      region: this.region,
    }).sign();
    const headers: Record<string, string> = Object.fromEntries(signed.headers.entries());
    if (body) headers['content-length'] = String(body.length);
    return new Promise((resolve, reject) => {
      const r = httpsRequest(
        signed.url,
        { method: req.method, headers, ca: this.caPem, timeout: 30_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      r.on('timeout', () => r.destroy(new Error(`${req.method} ${url.pathname}: timed out`)));
      r.on('error', reject);
      r.end(body);
    });
  }

  async stop(): Promise<void> {
    await stopRecordedService(this.#dir);
  }

  async #ok(what: string, req: S3Request): Promise<S3Response> {
    const res = await this.request(req);
    if (res.status < 200 || res.status > 299) throw new S3Error(what, res);
    return res;
  }
}

/** A path-style S3 path segment: every byte but unreserved characters and `/` percent-encoded. */
function encodeS3Path(segment: string): string {
  return encodeURIComponent(segment)
    .replace(/%2F/g, '/')
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function httpsGet(url: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = httpsRequest(url, { ca, timeout: 2_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('timeout', () => r.destroy(new Error(`GET ${url}: timed out`)));
    r.on('error', reject);
    r.end();
  });
}

// The S3 responses read here are the server's own fixed-schema documents
// (ListObjectsV2's ListBucketResult, the Error document), of which only leaf
// text elements are read: a pattern per element and XML's predefined and
// numeric entities are all they need, where an XML parser would be a second
// dependency for three fields.

/** The bodies of every `<tag>...</tag>` element in `xml`. */
function xmlElements(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</${tag}>`, 'g'))].map(
    (m) => m[1] ?? '',
  );
}

/** The text of the first `<tag>` element in `xml`, entities decoded. */
function xmlText(xml: string, tag: string): string | undefined {
  const body = xmlElements(xml, tag)[0];
  if (body === undefined) return undefined;
  return body.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(parseInt(entity.slice(1), 10));
    return { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" }[entity] ?? '';
  });
}
