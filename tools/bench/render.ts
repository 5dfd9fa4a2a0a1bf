// The Database reconcile's pure part, as JSON: what the controller would send
// for a given Database and what it observed. The reference operator in
// reference-go renders the same input, and reference.test.ts checks that the
// two agree byte for byte — so the benchmark compares the same work.
//
//   node tools/bench/render.ts < case.json
//   case: { database, password, statefulSet?, backupJobs?, now }
import type { V1Job, V1StatefulSet } from '@kubernetes/client-node';
import { Kinds } from '@regulon/client';
import {
  childNames,
  computeStatus,
  createdClaimSize,
  desiredChildren,
  generatedCredentials,
  type DatabaseObject,
} from '@regulon/database-controller';
import { childApplyBody, controllerReference, type Owner } from '@regulon/runtime';

export interface RenderCase {
  database: DatabaseObject;
  password: string;
  statefulSet?: V1StatefulSet;
  backupJobs?: V1Job[];
  now: string;
}

export interface Rendered {
  /** Apply bodies in order; `delete` for a child the Database must not have. */
  children: Array<{ kind: string; name: string; apply?: unknown; delete?: true }>;
  /** The create body of generated credentials (absent when spec.credentials names a Secret). */
  credentials?: unknown;
  status: unknown;
}

export function render(c: RenderCase): Rendered {
  const db = c.database;
  const owner = db as Owner & DatabaseObject;
  const createdSize = createdClaimSize(c.statefulSet);
  const children = desiredChildren(db, createdSize).map((child) =>
    child.object
      ? { kind: child.type.kind, name: child.name, apply: childApplyBody(child.type, child.object, owner) }
      : { kind: child.type.kind, name: child.name, delete: true as const },
  );
  const secret = generatedCredentials(db, c.password);
  const credentials = db.spec.credentials?.secretName
    ? undefined
    : {
        apiVersion: 'v1',
        kind: Kinds.Secret.kind,
        ...secret,
        metadata: {
          ...secret.metadata,
          namespace: db.metadata.namespace,
          ownerReferences: [controllerReference(owner)],
        },
      };
  const status = computeStatus(
    db,
    {
      statefulSet: c.statefulSet,
      backupJobs: c.backupJobs ?? [],
      problem: undefined,
      credentialsSecret: childNames(db).credentials,
    },
    new Date(c.now),
  );
  return { children, ...(credentials ? { credentials } : {}), status };
}

if (import.meta.main) {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RenderCase | RenderCase[];
  const out = Array.isArray(input) ? input.map(render) : render(input);
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}
