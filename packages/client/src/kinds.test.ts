import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Kinds, apiVersionOf, resourcePath } from './kinds.ts';
import { buildPath, encodeBody } from './request.ts';

describe('Kinds', () => {
  it('has the core, named-group and cluster-scoped types right', () => {
    assert.equal(apiVersionOf(Kinds.ConfigMap), 'v1');
    assert.equal(apiVersionOf(Kinds.Deployment), 'apps/v1');
    assert.equal(apiVersionOf(Kinds.Event), 'events.k8s.io/v1');
    assert.equal(apiVersionOf(Kinds.Lease), 'coordination.k8s.io/v1');
    assert.equal(Kinds.Namespace.namespaced, false);
    assert.equal(Kinds.ClusterRoleBinding.namespaced, false);
    assert.equal(Kinds.CustomResourceDefinition.plural, 'customresourcedefinitions');
    assert.ok(Object.isFrozen(Kinds) && Object.isFrozen(Kinds.Pod));
    for (const [name, t] of Object.entries(Kinds)) {
      assert.equal(t.kind, name);
      assert.match(t.plural, /^[a-z]+s$/);
    }
  });
});

describe('resourcePath', () => {
  it('builds collection, object and subresource paths', () => {
    assert.equal(resourcePath(Kinds.ConfigMap), '/api/v1/configmaps');
    assert.equal(resourcePath(Kinds.ConfigMap, 'ns'), '/api/v1/namespaces/ns/configmaps');
    assert.equal(
      resourcePath(Kinds.Deployment, 'ns', 'web', 'scale'),
      '/apis/apps/v1/namespaces/ns/deployments/web/scale',
    );
    assert.equal(resourcePath(Kinds.Node, 'ignored', 'n1'), '/api/v1/nodes/n1');
    assert.equal(resourcePath(Kinds.Pod, 'ns', 'a/b'), '/api/v1/namespaces/ns/pods/a%2Fb');
    assert.throws(() => resourcePath(Kinds.Pod, 'ns', ''), TypeError);
  });
});

describe('buildPath', () => {
  it('skips undefined and null, repeats arrays, stringifies scalars', () => {
    assert.equal(buildPath('/x', undefined), '/x');
    assert.equal(buildPath('/x', { a: undefined, b: null }), '/x');
    assert.equal(
      buildPath('/x', { labelSelector: 'app=web,tier in (a,b)', limit: 2, watch: true, dryRun: ['All'] }),
      '/x?labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&limit=2&watch=true&dryRun=All',
    );
  });
});

describe('encodeBody', () => {
  it('passes buffers and strings, serialises the rest', () => {
    assert.equal(encodeBody(undefined), undefined);
    assert.equal(encodeBody('a: 1')?.toString(), 'a: 1');
    assert.equal(encodeBody({ a: 1 })?.toString(), '{"a":1}');
    const buf = Buffer.from('x');
    assert.equal(encodeBody(buf), buf);
  });
});
