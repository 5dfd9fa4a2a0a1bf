import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { Cache, type CacheObject } from './api.ts';
import {
  CONFIG_HASH_ANNOTATION,
  desiredDeployment,
  desiredServices,
  desiredStatefulSet,
  generatedCredentials,
} from './children.ts';
import { maxMemoryBytes, memcachedMegabytes, renderConfig, RUN_DIR } from './config.ts';

const cache = (spec: Partial<CacheObject['spec']> = {}): CacheObject => ({
  ...Cache.object({
    metadata: { name: 'c', namespace: 'ns', uid: 'u', generation: 1 },
    spec: { engine: 'redis', version: '7.4.10', replicas: 1, memory: '512Mi', maxMemoryPercent: 75, ...spec },
  }),
});

describe('engine config', () => {
  test('redis maxmemory is the limit × maxMemoryPercent / 100, in bytes', () => {
    assert.equal(maxMemoryBytes(cache()), 402653184);
    assert.equal(maxMemoryBytes(cache({ memory: '1G', maxMemoryPercent: 50 })), 500_000_000);
    assert.equal(maxMemoryBytes(cache({ memory: 1_000_000_000, maxMemoryPercent: 10 })), 100_000_000);
    const { file, content } = renderConfig(cache({ evictionPolicy: 'volatile-ttl' }));
    assert.equal(file, 'redis.conf');
    assert.match(content, /^maxmemory 402653184$/m);
    assert.match(content, /^maxmemory-policy volatile-ttl$/m);
    assert.match(content, /^appendonly no$/m);
    assert.doesNotMatch(content, /requirepass|include/);
  });

  test('a replicated redis primary acknowledges a write only with a replica linked within half the failover delay', () => {
    const lines = (spec: Partial<CacheObject['spec']>) =>
      renderConfig(cache({ mode: 'replicated', ...spec }))
        .content.split('\n')
        .filter((l) => l.startsWith('min-replicas-'));
    assert.deepEqual(lines({ replicas: 3 }), ['min-replicas-to-write 1', 'min-replicas-max-lag 5']);
    assert.deepEqual(
      lines({ replicas: 3, replication: { minReplicasToWrite: 2, failoverDelaySeconds: 30 } }),
      ['min-replicas-to-write 2', 'min-replicas-max-lag 15'],
    );
    // With no replica there is nothing to wait for; a delay of 1 s still allows a second.
    assert.deepEqual(lines({ replicas: 1, replication: { failoverDelaySeconds: 1 } }), [
      'min-replicas-to-write 0',
      'min-replicas-max-lag 1',
    ]);
    assert.deepEqual(lines({ replicas: 3, replication: { minReplicasToWrite: 0 } }), [
      'min-replicas-to-write 0',
      'min-replicas-max-lag 5',
    ]);
    assert.deepEqual(lines({ replicas: 3, mode: 'standalone' }), [], 'standalone instances do not replicate');
  });

  test('a replicated redis replica takes a silent primary for gone after 5 s, pinged every second so that an idle link is not', () => {
    const lines = (spec: Partial<CacheObject['spec']>) =>
      renderConfig(cache(spec))
        .content.split('\n')
        .filter((l) => l.startsWith('repl-ping-replica-period') || l.startsWith('repl-timeout'));
    assert.deepEqual(lines({ replicas: 3, mode: 'replicated' }), [
      'repl-ping-replica-period 1',
      'repl-timeout 5',
    ]);
    assert.deepEqual(lines({ replicas: 3, mode: 'standalone' }), []);
  });

  test('redis defaults to allkeys-lru, persists with an append-only file, and only includes the auth file', () => {
    const { content } = renderConfig(
      cache({ persistence: { enabled: true, size: '1Gi' }, auth: { enabled: true } }),
    );
    assert.match(content, /^maxmemory-policy allkeys-lru$/m);
    assert.match(content, /^appendonly yes$/m);
    assert.match(content, new RegExp(`^include ${RUN_DIR.redis}/auth.conf$`, 'm'));
    assert.doesNotMatch(content, /requirepass/);
  });

  test('memcached gets its arguments: -m in megabytes, connection limit, auth file only when auth is on', () => {
    const mc = cache({ engine: 'memcached', version: '1.6.45', memory: '256Mi' });
    assert.equal(memcachedMegabytes(mc), 192);
    const { file, content } = renderConfig(mc);
    assert.equal(file, 'memcached.args');
    assert.deepEqual(content.trim().split('\n'), [
      '--port=11211',
      '--listen=0.0.0.0',
      '--memory-limit=192',
      '--conn-limit=1024',
      '--threads=4',
    ]);
    const authed = renderConfig({ ...mc, spec: { ...mc.spec, auth: { enabled: true } } }).content;
    assert.match(authed, /^--auth-file=\/run\/memcached\/auth$/m);
    assert.equal(memcachedMegabytes(cache({ engine: 'memcached', memory: '32Mi', maxMemoryPercent: 10 })), 3);
  });
});

describe('workloads', () => {
  test('the config hash moves with the config (auth, maxMemoryPercent) and not otherwise', () => {
    const hash = (c: CacheObject) =>
      desiredDeployment(c).spec?.template.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
    const base = hash(cache());
    assert.equal(hash(cache({ replicas: 3 })), base);
    assert.notEqual(hash(cache({ auth: { enabled: true } })), base);
    assert.notEqual(hash(cache({ maxMemoryPercent: 50 })), base);
  });

  test('the password reaches the container only through a secretKeyRef, never a literal', () => {
    const d = desiredDeployment(cache({ auth: { enabled: true, secretName: 'mine' } }));
    const c = d.spec!.template.spec!.containers[0]!;
    assert.deepEqual(c.env, [
      { name: 'REDISCLI_AUTH', valueFrom: { secretKeyRef: { name: 'mine', key: 'password' } } },
    ]);
    assert.equal(c.resources?.limits?.['memory'], '512Mi');
    assert.equal(c.securityContext?.readOnlyRootFilesystem, true);
    assert.equal(d.spec!.template.spec!.securityContext?.runAsUser, 999);
  });

  test("the redis readiness probe gives up on a hung server before the kubelet's timeout", () => {
    // containerd reports an exec probe's timeout only once its output closes: a redis-cli hung on a
    // paused server kept the probe (and the Pod's Ready) waiting on the real node. See engines.integration.test.ts.
    const probe = desiredDeployment(cache()).spec!.template.spec!.containers[0]!.readinessProbe!;
    const script = probe.exec?.command?.at(-1) ?? '';
    const bound = /^timeout (\d+) redis-cli .* ping \| grep -q PONG$/.exec(script);
    assert.ok(bound, script);
    assert.ok(Number(bound[1]) < probe.timeoutSeconds!, `${bound[1]} s within ${probe.timeoutSeconds} s`);
  });

  test('redis with persistence is a StatefulSet with a volume template, no emptyDir for data', () => {
    const s = desiredStatefulSet(
      cache({ persistence: { enabled: true, size: '2Gi', storageClassName: 'fast' } }),
    );
    assert.equal(s.spec?.serviceName, 'c-hl');
    assert.equal(s.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'], '2Gi');
    assert.equal(s.spec?.volumeClaimTemplates?.[0]?.spec?.storageClassName, 'fast');
    assert.ok(!s.spec?.template.spec?.volumes?.some((v) => v.name === 'data'));
  });

  test('the generated credentials are a complete Service Binding', () => {
    const s = generatedCredentials(cache(), 'p/w');
    assert.deepEqual(Object.keys(s.stringData ?? {}).sort(), [
      'host',
      'password',
      'port',
      'provider',
      'type',
      'uri',
    ]);
    assert.equal(s.stringData?.['uri'], 'redis://:p%2Fw@c.ns.svc:6379');
    const m = generatedCredentials(cache({ engine: 'memcached', version: '1.6.45' }), 'pw');
    assert.equal(m.stringData?.['uri'], 'memcached://memcached:pw@c.ns.svc:11211');
  });
});

describe('start scripts (run with sh, the engine replaced by cat)', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const run = (command: string[], runDir: string, file: string, env: Record<string, string>) => {
    const dir = mkdtempSync(join(tmpdir(), 'cache-'));
    dirs.push(dir);
    const script = command[2]!
      .replaceAll(runDir, dir)
      .replace(/exec (redis-server|memcached) .*$/, `cat ${dir}/${file}`);
    return {
      out: execFileSync('sh', ['-c', script], { env: { PATH: process.env['PATH'], ...env } }).toString(),
      dir,
    };
  };

  test('redis: requirepass is written quoted and escaped to the include file', () => {
    const cmd = desiredDeployment(cache({ auth: { enabled: true } })).spec!.template.spec!.containers[0]!
      .command!;
    const { out, dir } = run(cmd, RUN_DIR.redis, 'auth.conf', { REDISCLI_AUTH: 'a"b\\c d' });
    assert.equal(out, 'requirepass "a\\"b\\\\c d"\n');
    assert.equal(readFileSync(join(dir, 'auth.conf'), 'utf8'), out);
    const noAuth = desiredDeployment(cache()).spec!.template.spec!.containers[0]!.command!;
    assert.deepEqual(noAuth, ['redis-server', '/etc/redis/redis.conf']);
  });

  test('memcached: the auth file is user:password, the user defaulting to memcached', () => {
    const mc = cache({ engine: 'memcached', version: '1.6.45', auth: { enabled: true } });
    const cmd = desiredDeployment(mc).spec!.template.spec!.containers[0]!.command!;
    assert.equal(run(cmd, RUN_DIR.memcached, 'auth', { MEMCACHED_PASSWORD: 'pw' }).out, 'memcached:pw\n');
    assert.equal(
      run(cmd, RUN_DIR.memcached, 'auth', { MEMCACHED_PASSWORD: 'pw', MEMCACHED_USERNAME: 'app' }).out,
      'app:pw\n',
    );
  });
});

describe('replicated redis', () => {
  const replicated = (spec: Partial<CacheObject['spec']> = {}) =>
    cache({ mode: 'replicated', replicas: 3, auth: { enabled: true }, ...spec });

  test('a StatefulSet the manager rolls (OnDelete), volumes only when persistent, the topology mounted', () => {
    const sts = desiredStatefulSet(replicated(), undefined, 3);
    assert.equal(sts.spec?.updateStrategy?.type, 'OnDelete');
    assert.equal(sts.spec?.volumeClaimTemplates, undefined);
    const pod = sts.spec.template.spec!;
    assert.deepEqual(
      pod.volumes?.find((v) => v.name === 'topology'),
      { name: 'topology', configMap: { name: 'c-topology' } },
    );
    const env = new Map(pod.containers[0]!.env!.map((e) => [e.name, e]));
    assert.equal(env.get('PRIMARY_HOST')?.value, 'c.ns.svc', 'replicas follow the client Service');
    assert.equal(env.get('REDISCLI_AUTH')?.valueFrom?.secretKeyRef?.name, 'c-credentials');
    assert.equal(
      desiredStatefulSet(replicated({ persistence: { enabled: true, size: '1Gi' } })).spec
        ?.volumeClaimTemplates?.length,
      1,
    );
    // A primary on an ordinal being scaled away keeps its Pod until it has handed over.
    assert.equal(desiredStatefulSet(replicated({ replicas: 2 }), undefined, 3).spec?.replicas, 3);
  });

  test('the client Service selects the primary, -ro the replicas; standalone Services select every Pod', () => {
    const s = desiredServices(replicated());
    assert.equal(s.client.spec?.selector?.['regulon.dev/role'], 'primary');
    assert.equal(s.readOnly?.metadata?.name, 'c-ro');
    assert.equal(s.readOnly?.spec?.selector?.['regulon.dev/role'], 'replica');
    assert.equal(s.headless.spec?.selector?.['regulon.dev/role'], undefined);
    const standalone = desiredServices(cache({ replicas: 3 }));
    assert.equal(standalone.readOnly, undefined);
    assert.equal(standalone.client.spec?.selector?.['regulon.dev/role'], undefined);
  });

  test('redis.conf includes the role the start script decides, and replicas refuse writes', () => {
    const { content } = renderConfig(replicated());
    assert.match(content, new RegExp(`^include ${RUN_DIR.redis}/role.conf$`, 'm'));
    assert.match(content, /^replica-read-only yes$/m);
    assert.match(content, /^dir \/data\/redis$/m);
    assert.doesNotMatch(renderConfig(cache()).content, /role\.conf|replica-/);
  });
});
