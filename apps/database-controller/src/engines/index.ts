// The one place an engine's name picks its behaviour. Everything else asks
// the object it gets here (see ../engine.ts for what it holds).
import type { DatabaseObject } from '../api.ts';
import type { EngineBehaviour } from '../engine.ts';
import type { Engine } from '../versions.ts';
import { mariadb } from './mariadb.ts';
import { mysql } from './mysql.ts';
import { postgres } from './postgres.ts';

export const engines: Readonly<Record<Engine, EngineBehaviour>> = { postgres, mysql, mariadb };

/** The behaviour of the Database's engine. */
export const engineOf = (db: DatabaseObject): EngineBehaviour => engines[db.spec.engine];
