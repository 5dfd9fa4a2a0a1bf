// The client's request pipeline (retries, rate limit, error mapping, request
// shapes) against a scripted transport. Behaviour on the wire is covered by
// the integration tests against a real API server.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { PassThrough, Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { FakeClock, type Clock, type TimerHandle } from '@regulon/util';
import { KubeClient } from './client.ts';
import {
  ConflictError,
  GoneError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
} from './errors.ts';
import { Kinds } from './kinds.ts';
import type { HttpTransport, OpenStream, TransportRequest, TransportResponse } from './transport.ts';

type Reply =
  TransportResponse | Error | ((req: TransportRequest) => TransportResponse | Promise<TransportResponse>);

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): TransportResponse {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: Buffer.from(JSON.stringify(body)),
  };
}

function status(code: number, reason: string, message = `it is ${reason}`): TransportResponse {
  return json(code, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

function netError(code: string): Error {
  return Object.assign(new Error(`connect ${code}`), { code });
}

class ScriptedTransport implements HttpTransport {
  readonly server = new URL('https://10.0.0.1:6443');
  readonly host = '10.0.0.1:6443';
  readonly requests: TransportRequest[] = [];
  readonly replies: Reply[] = [];
  streams: Array<{ statusCode: number; body: Readable }> = [];
  closed = 0;

  async send(req: TransportRequest): Promise<TransportResponse> {
    this.requests.push(req);
    const reply = this.replies.shift();
    if (!reply) throw new Error(`unexpected request ${req.method} ${req.path}`);
    if (reply instanceof Error) throw reply;
    return typeof reply === 'function' ? reply(req) : reply;
  }

  open(req: TransportRequest): Promise<OpenStream> {
    this.requests.push(req);
    const s = this.streams.shift();
    if (!s) return Promise.reject(new Error('unexpected watch'));
    const response = Object.assign(s.body, {
      statusCode: s.statusCode,
      headers: {},
    }) as unknown as IncomingMessage;
    return Promise.resolve({
      response,
      close: () => {
        this.closed++;
        s.body.destroy();
      },
    });
  }

  close(): void {}
}

/** A clock on which every wait is over at once: time jumps ahead by it, and each wait is recorded. */
function instantClock(): Clock & { sleeps: number[] } {
  let now = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => now,
    setTimeout(fn, ms) {
      sleeps.push(ms);
      now += ms;
      queueMicrotask(fn);
      return {} as TimerHandle;
    },
    clearTimeout() {},
  };
}

function setup(opts: { maxRetries?: number; qps?: number; burst?: number; registry?: Registry } = {}) {
  const transport = new ScriptedTransport();
  const clock = instantClock();
  const client = new KubeClient(new KubeConfig(), { clock, ...opts }, transport);
  return { client, transport, clock };
}

const cm = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns', ...extra },
});

describe('guardWrites', () => {
  it('runs before each attempt of a write, not of a read; what it throws fails the write unsent, unretried', async () => {
    const { client, transport } = setup();
    let refuse = false;
    let asked = 0;
    client.guardWrites(() => {
      asked++;
      if (refuse) throw new Error('no longer the leader');
    });
    transport.replies.push(
      { ...status(429, 'TooManyRequests'), headers: { 'content-type': 'application/json' } },
      json(201, cm('a')),
      json(200, cm('a')),
    );
    await client.resource(Kinds.ConfigMap).create(cm('a'));
    assert.equal(asked, 2, 'once per attempt: the retry after 429 asked again');
    await client.resource(Kinds.ConfigMap).get('a', { namespace: 'ns' });
    assert.equal(asked, 2, 'a read is not guarded');

    refuse = true;
    await assert.rejects(
      client.resource(Kinds.ConfigMap).delete('a', { namespace: 'ns' }),
      /no longer the leader/,
    );
    assert.equal(transport.requests.length, 3, 'the refused delete was never sent');
    client.guardWrites(undefined);
    transport.replies.push(json(200, cm('a')));
    await client.resource(Kinds.ConfigMap).delete('a', { namespace: 'ns' });
    assert.equal(transport.requests.length, 4);
  });
});

describe('retries', () => {
  it('retries 429 even for a create, honouring Retry-After', async () => {
    const { client, transport, clock } = setup();
    transport.replies.push(
      {
        ...status(429, 'TooManyRequests'),
        headers: { 'content-type': 'application/json', 'retry-after': '2' },
      },
      json(201, cm('a')),
    );
    const created = await client.resource(Kinds.ConfigMap).create(cm('a'));
    assert.equal(created.metadata?.name, 'a');
    assert.equal(transport.requests.length, 2);
    assert.deepEqual(clock.sleeps, [2000]);
  });

  it('retries 5xx for GET with growing backoff, then gives up with ServerError', async () => {
    const { client, transport, clock } = setup({ maxRetries: 3 });
    for (let i = 0; i < 4; i++) transport.replies.push(status(503, 'ServiceUnavailable'));
    await assert.rejects(client.resource(Kinds.ConfigMap).get('a', { namespace: 'ns' }), ServerError);
    assert.equal(transport.requests.length, 4);
    assert.equal(clock.sleeps.length, 3);
    assert.ok(clock.sleeps[0]! >= 100 && clock.sleeps[0]! <= 200, `first delay ${clock.sleeps[0]}`);
    assert.ok(clock.sleeps[2]! >= 400 && clock.sleeps[2]! <= 800, `third delay ${clock.sleeps[2]}`);
  });

  it('does not retry 5xx for create or merge patch', async () => {
    const { client, transport } = setup();
    transport.replies.push(status(500, 'InternalError'), status(500, 'InternalError'));
    const rc = client.resource(Kinds.ConfigMap);
    await assert.rejects(rc.create(cm('a')), ServerError);
    await assert.rejects(rc.patch('a', { data: {} }, { type: 'merge', namespace: 'ns' }), ServerError);
    assert.equal(transport.requests.length, 2);
  });

  it('retries 5xx for delete, server-side apply and a PUT guarded by resourceVersion', async () => {
    const { client, transport } = setup();
    const rc = client.resource(Kinds.ConfigMap);
    transport.replies.push(status(502, 'InternalError'), json(200, { kind: 'Status', status: 'Success' }));
    await rc.delete('a', { namespace: 'ns' });
    transport.replies.push(status(502, 'InternalError'), json(200, cm('a')));
    await rc.apply(cm('a'), { fieldManager: 'm' });
    transport.replies.push(status(502, 'InternalError'), json(200, cm('a')));
    await rc.replace(cm('a', { resourceVersion: '5' }));
    transport.replies.push(status(502, 'InternalError'));
    await assert.rejects(rc.replace(cm('a')), ServerError);
    assert.equal(transport.requests.length, 7);
  });

  it('retries a refused connection for any verb, a reset one only when idempotent', async () => {
    const { client, transport } = setup();
    const rc = client.resource(Kinds.ConfigMap);
    transport.replies.push(netError('ECONNREFUSED'), json(201, cm('a')));
    await rc.create(cm('a'));
    transport.replies.push(netError('ECONNRESET'));
    await assert.rejects(rc.create(cm('b')), { code: 'ECONNRESET' });
    transport.replies.push(netError('ECONNRESET'), json(200, cm('b')));
    await rc.get('b', { namespace: 'ns' });
    assert.equal(transport.requests.length, 5);
  });

  it('does not retry a client-side timeout', async () => {
    const { client, transport } = setup();
    transport.replies.push(new TimeoutError(0, { kind: 'Status', reason: 'Timeout', message: 'late' }));
    await assert.rejects(client.resource(Kinds.ConfigMap).get('a', { namespace: 'ns' }), TimeoutError);
    assert.equal(transport.requests.length, 1);
  });

  it('maxRetries 0 disables retrying', async () => {
    const { client, transport } = setup({ maxRetries: 0 });
    transport.replies.push(status(429, 'TooManyRequests'));
    await assert.rejects(client.request({ method: 'GET', path: '/api' }), TooManyRequestsError);
    assert.equal(transport.requests.length, 1);
  });

  it('an abort during backoff rejects with the abort reason and stops', async () => {
    const transport = new ScriptedTransport();
    const ac = new AbortController();
    // Shutdown arrives just as the retry's backoff starts.
    const fake = new FakeClock();
    const clock: Clock = {
      now: () => fake.now(),
      setTimeout: (fn, ms) => {
        const handle = fake.setTimeout(fn, ms);
        ac.abort(new Error('shutting down'));
        return handle;
      },
      clearTimeout: (handle) => fake.clearTimeout(handle),
    };
    const client = new KubeClient(new KubeConfig(), { clock }, transport);
    transport.replies.push(status(503, 'ServiceUnavailable'));
    await assert.rejects(client.request({ method: 'GET', path: '/api', signal: ac.signal }), /shutting down/);
    assert.equal(transport.requests.length, 1);
  });
});

describe('rate limiting', () => {
  it('every attempt takes a token', async () => {
    const { client, transport, clock } = setup({ qps: 10, burst: 2 });
    transport.replies.push(json(200, {}), json(200, {}), json(200, {}));
    await client.request({ method: 'GET', path: '/a' });
    await client.request({ method: 'GET', path: '/b' });
    assert.deepEqual(clock.sleeps, []);
    await client.request({ method: 'GET', path: '/c' });
    assert.equal(clock.sleeps.length, 1);
    assert.ok(Math.abs(clock.sleeps[0]! - 100) < 1e-6);
  });
});

describe('errors', () => {
  it('maps a Status body to a typed error with the server message', async () => {
    const { client, transport } = setup();
    transport.replies.push(
      status(409, 'Conflict', 'Operation cannot be fulfilled: the object has been modified'),
    );
    const err: unknown = await client
      .resource(Kinds.ConfigMap)
      .replace(cm('a', { resourceVersion: '1' }))
      .catch((e: unknown) => e);
    assert.ok(err instanceof ConflictError);
    assert.equal(err.message, 'Operation cannot be fulfilled: the object has been modified');
    assert.equal(err.status.reason, 'Conflict');
  });

  it('maps a non-Status error body by its code', async () => {
    const { client, transport } = setup();
    transport.replies.push({
      statusCode: 404,
      headers: { 'content-type': 'text/plain' },
      body: Buffer.from('404 page not found'),
    });
    await assert.rejects(client.request({ method: 'GET', path: '/nope' }), NotFoundError);
  });

  it('never quotes a response body that fails to parse', async () => {
    const { client, transport } = setup();
    transport.replies.push({
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      body: Buffer.from('{"data":{"token":"s3cr3t"'),
    });
    await assert.rejects(
      client.request({ method: 'GET', path: '/x' }),
      (e: Error) => !e.message.includes('s3cr3t'),
    );
  });
});

describe('request shapes', () => {
  it('sends accept, user agent, content type and body', async () => {
    const { client, transport } = setup();
    const rc = client.resource(Kinds.ConfigMap);
    transport.replies.push(json(201, cm('a')));
    await rc.create({ metadata: { name: 'a', namespace: 'ns' } }, { fieldManager: 'me', dryRun: true });
    const req = transport.requests[0]!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/api/v1/namespaces/ns/configmaps?fieldManager=me&dryRun=All');
    assert.equal(req.headers['accept'], 'application/json');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.match(req.headers['user-agent']!, /^regulon-client\//);
    // apiVersion and kind are filled in for the server.
    assert.deepEqual(JSON.parse(req.body!.toString()), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'a', namespace: 'ns' },
    });
  });

  it('uses the patch content types and subresources', async () => {
    const { client, transport } = setup();
    const rc = client.resource(Kinds.Deployment);
    for (let i = 0; i < 5; i++) transport.replies.push(json(200, {}));
    await rc.patch('web', { spec: {} }, { type: 'merge', namespace: 'ns' });
    await rc.patch('web', [{ op: 'add', path: '/x', value: 1 }], { type: 'json', namespace: 'ns' });
    await rc.patch(
      'web',
      { spec: { replicas: 2 } },
      { type: 'strategic', namespace: 'ns', subresource: 'scale' },
    );
    await rc.patchStatus('web', { status: {} }, { namespace: 'ns' });
    await rc.apply({ metadata: { name: 'web', namespace: 'ns' } }, { fieldManager: 'ctl', force: true });
    const r = transport.requests;
    assert.deepEqual(
      r.map((x) => [x.path, x.headers['content-type']]),
      [
        ['/apis/apps/v1/namespaces/ns/deployments/web', 'application/merge-patch+json'],
        ['/apis/apps/v1/namespaces/ns/deployments/web', 'application/json-patch+json'],
        ['/apis/apps/v1/namespaces/ns/deployments/web/scale', 'application/strategic-merge-patch+json'],
        ['/apis/apps/v1/namespaces/ns/deployments/web/status', 'application/merge-patch+json'],
        [
          '/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=ctl&force=true',
          'application/apply-patch+yaml',
        ],
      ],
    );
    assert.equal((JSON.parse(r[4]!.body!.toString()) as { kind: string }).kind, 'Deployment');
  });

  it('sends delete options in the body', async () => {
    const { client, transport } = setup();
    transport.replies.push(json(200, {}));
    await client.resource(Kinds.Deployment).delete('web', {
      namespace: 'ns',
      propagationPolicy: 'Foreground',
      preconditions: { uid: 'u1' },
      gracePeriodSeconds: 0,
    });
    assert.deepEqual(JSON.parse(transport.requests[0]!.body!.toString()), {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      propagationPolicy: 'Foreground',
      preconditions: { uid: 'u1' },
      gracePeriodSeconds: 0,
    });
  });

  it('requires a namespace for namespaced item operations', async () => {
    const { client } = setup();
    const rc = client.resource(Kinds.ConfigMap);
    await assert.rejects(rc.get('a'), TypeError);
    await assert.rejects(rc.create({ metadata: { name: 'a' } }), TypeError);
    await assert.rejects(
      rc.apply({ metadata: { name: 'a', namespace: 'ns' } }, { fieldManager: '' }),
      TypeError,
    );
  });

  it('asks for metadata only', async () => {
    const { client, transport } = setup();
    transport.replies.push(
      json(200, { kind: 'PartialObjectMetadataList', items: [], metadata: { resourceVersion: '9' } }),
    );
    const list = await client.resource(Kinds.Secret).list({ namespace: 'ns', metadataOnly: true });
    assert.equal(list.resourceVersion, '9');
    assert.match(
      transport.requests[0]!.headers['accept']!,
      /^application\/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1/,
    );
  });
});

describe('listAll', () => {
  it('follows continue tokens without resending resourceVersion', async () => {
    const { client, transport } = setup();
    transport.replies.push(
      json(200, {
        items: [{ metadata: { name: 'a' } }],
        metadata: { resourceVersion: '10', continue: 't1' },
      }),
      json(200, {
        items: [{ metadata: { name: 'b' } }],
        metadata: { resourceVersion: '10', continue: 't2' },
      }),
      json(200, { items: [{ metadata: { name: 'c' } }], metadata: { resourceVersion: '10' } }),
    );
    const all = await client
      .resource(Kinds.ConfigMap)
      .listAll({ namespace: 'ns', pageSize: 1, resourceVersion: '0', resourceVersionMatch: 'NotOlderThan' });
    assert.deepEqual(
      all.items.map((i) => i.metadata?.name),
      ['a', 'b', 'c'],
    );
    assert.equal(all.items[0]!.kind, 'ConfigMap');
    assert.equal(all.resourceVersion, '10');
    assert.equal(all.continue, undefined);
    assert.deepEqual(
      transport.requests.map((r) => r.path),
      [
        '/api/v1/namespaces/ns/configmaps?limit=1&resourceVersion=0&resourceVersionMatch=NotOlderThan',
        '/api/v1/namespaces/ns/configmaps?limit=1&continue=t1',
        '/api/v1/namespaces/ns/configmaps?limit=1&continue=t2',
      ],
    );
  });

  it('restarts once when a continue token expires, then gives up', async () => {
    const { client, transport } = setup();
    const page1 = json(200, {
      items: [{ metadata: { name: 'a' } }],
      metadata: { resourceVersion: '1', continue: 't' },
    });
    const expired = status(410, 'Expired', 'The provided continue parameter is too old');
    transport.replies.push(
      page1,
      expired,
      json(200, { items: [{ metadata: { name: 'x' } }], metadata: { resourceVersion: '2' } }),
    );
    const all = await client.resource(Kinds.ConfigMap).listAll();
    assert.deepEqual(
      all.items.map((i) => i.metadata?.name),
      ['x'],
    );
    assert.equal(all.resourceVersion, '2');
    transport.replies.push(page1, expired, page1, expired);
    await assert.rejects(client.resource(Kinds.ConfigMap).listAll(), GoneError);
  });
});

describe('shardSelector (KEP-5866)', () => {
  const selector = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
  const query = `shardSelector=${new URLSearchParams({ s: selector }).toString().slice(2)}`;

  it('is sent on list and watch; the echoed shardInfo comes back with the list', async () => {
    const { client, transport } = setup();
    transport.replies.push(
      json(200, { items: [], metadata: { resourceVersion: '3', shardInfo: { selector } } }),
      json(200, { items: [], metadata: { resourceVersion: '4' } }),
    );
    transport.streams.push({ statusCode: 200, body: Readable.from([]) });
    const rc = client.resource(Kinds.ConfigMap);
    const sharded = await rc.list({ namespace: 'ns', shardSelector: selector });
    assert.deepEqual(sharded.shardInfo, { selector });
    // A server without the ShardedListAndWatch gate ignores the parameter and echoes nothing.
    assert.equal((await rc.list({ namespace: 'ns', shardSelector: selector })).shardInfo, undefined);
    for await (const _ of client.watch(Kinds.ConfigMap, { namespace: 'ns', shardSelector: selector }))
      assert.fail('no events expected');
    assert.deepEqual(
      transport.requests.map((r) => r.path),
      [
        `/api/v1/namespaces/ns/configmaps?${query}`,
        `/api/v1/namespaces/ns/configmaps?${query}`,
        `/api/v1/namespaces/ns/configmaps?watch=1&${query}`,
      ],
    );
  });

  it('listAll resends it with every continue token and reports shardInfo only if every page had it', async () => {
    const { client, transport } = setup();
    const page = (name: string, shardInfo: boolean, cont?: string) =>
      json(200, {
        items: [{ metadata: { name } }],
        metadata: {
          resourceVersion: '10',
          ...(cont ? { continue: cont } : {}),
          ...(shardInfo ? { shardInfo: { selector } } : {}),
        },
      });
    transport.replies.push(page('a', true, 't1'), page('b', true));
    const all = await client.resource(Kinds.ConfigMap).listAll({ pageSize: 1, shardSelector: selector });
    assert.deepEqual(all.shardInfo, { selector });
    assert.deepEqual(
      transport.requests.map((r) => r.path),
      [`/api/v1/configmaps?limit=1&${query}`, `/api/v1/configmaps?limit=1&continue=t1&${query}`],
    );
    transport.replies.push(page('a', true, 't1'), page('b', false));
    const mixed = await client.resource(Kinds.ConfigMap).listAll({ pageSize: 1, shardSelector: selector });
    assert.equal(mixed.shardInfo, undefined);
  });
});

describe('watch', () => {
  it('streams events and closes the stream at the end', async () => {
    const { client, transport } = setup();
    const lines = [
      { type: 'ADDED', object: { metadata: { name: 'a' } } },
      {
        type: 'BOOKMARK',
        object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '7' } },
      },
      { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } },
    ].map((l) => JSON.stringify(l) + '\n');
    transport.streams.push({ statusCode: 200, body: Readable.from([Buffer.from(lines.join(''))]) });
    const events = [];
    for await (const e of client.watch(Kinds.ConfigMap, {
      namespace: 'ns',
      allowWatchBookmarks: true,
      resourceVersion: '5',
    })) {
      events.push(e);
    }
    assert.deepEqual(
      events.map((e) => e.type),
      ['ADDED', 'BOOKMARK', 'ERROR'],
    );
    assert.equal(transport.closed, 1);
    const req = transport.requests[0]!;
    assert.equal(
      req.path,
      '/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=5&allowWatchBookmarks=true',
    );
  });

  it('throws a typed error when the server refuses', async () => {
    const { client, transport } = setup();
    const body = JSON.stringify({
      kind: 'Status',
      code: 410,
      reason: 'Expired',
      message: 'too old resource version',
    });
    transport.streams.push({ statusCode: 410, body: Readable.from([Buffer.from(body)]) });
    const iterate = async () => {
      for await (const _ of client.watch(Kinds.ConfigMap)) assert.fail('no events expected');
    };
    await assert.rejects(
      iterate,
      (e: unknown) => e instanceof GoneError && e.message === 'too old resource version',
    );
  });

  it('ends without error when aborted', async () => {
    const { client, transport } = setup();
    const body = new PassThrough();
    transport.streams.push({ statusCode: 200, body });
    const ac = new AbortController();
    body.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
    const seen: string[] = [];
    for await (const e of client.watch(Kinds.ConfigMap, { signal: ac.signal })) {
      seen.push(e.type);
      ac.abort();
      body.destroy(new DOMException('aborted', 'AbortError'));
    }
    assert.deepEqual(seen, ['ADDED']);
    assert.equal(transport.closed, 1);
  });

  it('is never retried', async () => {
    const { client, transport } = setup();
    transport.streams.push({ statusCode: 503, body: Readable.from([]) });
    await assert.rejects(async () => {
      for await (const _ of client.watch(Kinds.ConfigMap)) assert.fail();
    }, ServerError);
    assert.equal(transport.requests.length, 1);
  });
});

describe('metrics', () => {
  it('counts every attempt by code, method and host, times each request once; shares metrics per registry', async () => {
    const registry = new Registry();
    const a = setup({ registry });
    const b = setup({ registry });
    a.transport.replies.push(status(503, 'ServiceUnavailable'), json(200, {}));
    await a.client.request({ method: 'GET', path: '/x' });
    b.transport.replies.push(json(201, {}));
    await b.client.request({ method: 'POST', path: '/y', body: {} });
    b.transport.streams.push({ statusCode: 200, body: Readable.from([]) });
    for await (const _ of b.client.watch(Kinds.Pod)) assert.fail();
    const counter = await registry.getSingleMetric('rest_client_requests_total')!.get();
    const values = counter.values.map((v) => [v.labels.code, v.labels.method, v.labels.host, v.value]);
    assert.deepEqual(values.sort(), [
      ['200', 'GET', '10.0.0.1:6443', 2],
      ['201', 'POST', '10.0.0.1:6443', 1],
      ['503', 'GET', '10.0.0.1:6443', 1],
    ]);
    const hist = await registry.getSingleMetric('rest_client_request_duration_seconds')!.get();
    const count = hist.values.filter(
      (v) => (v as { metricName?: string }).metricName === 'rest_client_request_duration_seconds_count',
    );
    // As client-go: the GET retried after a 503 is one request, timed across both attempts.
    assert.deepEqual(count.map((v) => [v.labels.verb, v.labels.host, v.value]).sort(), [
      ['GET', '10.0.0.1:6443', 2],
      ['POST', '10.0.0.1:6443', 1],
    ]);
  });
});
