import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1OwnerReference } from '@kubernetes/client-node';
import { Kinds, type KubeObject, type ResourceType } from '@regulon/client';
import {
  ChildConflictError,
  assertCanControl,
  controllerReference,
  isControlledBy,
  type Owner,
} from './ownership.ts';

const owner: Owner = {
  apiVersion: 'example.com/v1',
  kind: 'Web',
  metadata: { name: 'web', namespace: 'team', uid: 'uid-web' },
};

const cm = (ownerReferences?: V1OwnerReference[]): KubeObject => ({
  metadata: { name: 'web-config', namespace: 'team', ...(ownerReferences ? { ownerReferences } : {}) },
});

const conflict = (existing: KubeObject, type: ResourceType = Kinds.ConfigMap): ChildConflictError => {
  try {
    assertCanControl(type, existing, owner);
  } catch (err) {
    assert.ok(err instanceof ChildConflictError, `expected ChildConflictError, got ${String(err)}`);
    return err;
  }
  assert.fail('assertCanControl accepted an object its owner does not control');
};

describe('controllerReference', () => {
  it('is a controller reference that blocks the owner deletion, by uid', () => {
    assert.deepEqual(controllerReference(owner), {
      apiVersion: 'example.com/v1',
      kind: 'Web',
      name: 'web',
      uid: 'uid-web',
      controller: true,
      blockOwnerDeletion: true,
    });
  });
});

describe('assertCanControl', () => {
  it('accepts a name nobody holds yet', () => {
    assert.doesNotThrow(() => assertCanControl(Kinds.ConfigMap, undefined, owner));
  });

  it('accepts a child the owner controls', () => {
    assert.doesNotThrow(() => assertCanControl(Kinds.ConfigMap, cm([controllerReference(owner)]), owner));
  });

  it('refuses an object nobody controls, saying it was not created by the owner', () => {
    const err = conflict(cm());
    assert.equal(err.existingOwner, undefined);
    assert.equal(err.type, Kinds.ConfigMap);
    assert.equal(err.namespace, 'team');
    assert.equal(err.childName, 'web-config');
    assert.equal(
      err.message,
      'ConfigMap team/web-config already exists and was not created by it, not by Web web; leaving it untouched. Delete or rename it to let Web web create its own.',
    );
  });

  it('refuses an object another owner controls, naming that owner', () => {
    const theirs: V1OwnerReference = {
      ...controllerReference(owner),
      kind: 'Api',
      name: 'api',
      uid: 'uid-api',
    };
    const err = conflict(cm([theirs]));
    assert.deepEqual(err.existingOwner, theirs);
    assert.match(
      err.message,
      /^ConfigMap team\/web-config already exists and is controlled by Api api, not by Web web;/,
    );
  });

  it('refuses an object the owner only references, without controlling it', () => {
    const err = conflict(cm([{ ...controllerReference(owner), controller: false }]));
    assert.equal(err.existingOwner, undefined);
  });

  it('goes by uid, not by name: an owner recreated under the same name does not control its predecessor child', () => {
    const predecessor = { ...controllerReference(owner), uid: 'uid-web-before' };
    const err = conflict(cm([predecessor]));
    assert.equal(err.existingOwner?.uid, 'uid-web-before');
    assert.match(err.message, /is controlled by Web web, not by Web web/);
  });

  it('names a cluster-scoped object without a namespace', () => {
    const err = conflict({ metadata: { name: 'web-reader' } }, Kinds.ClusterRole);
    assert.equal(err.namespace, undefined);
    assert.match(err.message, /^ClusterRole web-reader already exists/);
  });
});

describe('isControlledBy', () => {
  it('needs the owner as controller among any other references', () => {
    const plain: V1OwnerReference = { apiVersion: 'v1', kind: 'Foo', name: 'foo', uid: 'uid-foo' };
    assert.equal(isControlledBy(cm([plain, controllerReference(owner)]), owner), true);
    assert.equal(isControlledBy(cm([plain]), owner), false);
    assert.equal(isControlledBy(cm(), owner), false);
  });
});
