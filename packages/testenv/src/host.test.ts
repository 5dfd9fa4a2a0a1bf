import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addedIptables, iptablesUndoScript, scoped } from './host.ts';

const before = `*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:USER-CHAIN - [0:0]
-A INPUT -i lo -j ACCEPT
-A USER-CHAIN -j RETURN
COMMIT
`;

const after = `*mangle
:PREROUTING ACCEPT [0:0]
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:USER-CHAIN - [0:0]
:REGULON-NODE-FORWARD - [0:0]
-A INPUT -i lo -j ACCEPT
-A FORWARD -j REGULON-NODE-FORWARD
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j ACCEPT
-A USER-CHAIN -j RETURN
-A REGULON-NODE-FORWARD -i regulon0 -j DROP
COMMIT
`;

test('finds the rules and user chains added since the snapshot, not built-in chains or old rules', () => {
  const added = addedIptables(before, after);
  assert.deepEqual(added.chains.sort(), ['filter REGULON-NODE-FORWARD', 'mangle KUBE-KUBELET-CANARY']);
  assert.deepEqual(added.rules, [
    'filter -A FORWARD -j REGULON-NODE-FORWARD',
    'filter -A FORWARD -m comment --comment "kubernetes forwarding rules" -j ACCEPT',
    'filter -A REGULON-NODE-FORWARD -i regulon0 -j DROP',
  ]);
  assert.deepEqual(addedIptables(before, before), { rules: [], chains: [] });
});

test('undoes rules before flushing and deleting the chains they jump to, table by table', () => {
  const script = iptablesUndoScript(addedIptables(before, after));
  assert.equal(
    script,
    `*filter
-D FORWARD -j REGULON-NODE-FORWARD
-D FORWARD -m comment --comment "kubernetes forwarding rules" -j ACCEPT
-D REGULON-NODE-FORWARD -i regulon0 -j DROP
-F REGULON-NODE-FORWARD
-X REGULON-NODE-FORWARD
COMMIT
*mangle
-F KUBE-KUBELET-CANARY
-X KUBE-KUBELET-CANARY
COMMIT
`,
  );
});

test("a second node's undo keeps to its own chains: rules in them or jumping to them, not the first node's", () => {
  const withSecond = after
    .replace(
      ':REGULON-NODE-FORWARD - [0:0]\n',
      ':REGULON-NODE-FORWARD - [0:0]\n:REGULON-NODE1-FORWARD - [0:0]\n',
    )
    .replace(
      '-A REGULON-NODE-FORWARD -i regulon0 -j DROP\n',
      '-A REGULON-NODE-FORWARD -i regulon0 -j DROP\n-A FORWARD -j REGULON-NODE1-FORWARD\n-A REGULON-NODE1-FORWARD -i regulon1h -j DROP\n',
    );
  const added = scoped(addedIptables(before, withSecond), 'REGULON-NODE1-');
  assert.deepEqual(added, {
    rules: [
      'filter -A FORWARD -j REGULON-NODE1-FORWARD',
      'filter -A REGULON-NODE1-FORWARD -i regulon1h -j DROP',
    ],
    chains: ['filter REGULON-NODE1-FORWARD'],
  });
  // Without a prefix, everything added since the snapshot is the node's.
  assert.equal(scoped(addedIptables(before, withSecond), undefined).rules.length, 5);
});
