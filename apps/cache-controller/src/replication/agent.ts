// A replicated redis under the instance agent (@regulon/instance-agent): the
// two questions the agent asks its engine, as shell commands run in the
// container. redis-cli authenticates from REDISCLI_AUTH, which the agent has
// in its environment (the start script unsets it only for redis-server).
import { MEMBERS_KEY } from '@regulon/conventions';
import { ENGINE_DEFAULTS } from '../versions.ts';
import { TOPOLOGY_MOUNT } from './start-script.ts';

const PORT = ENGINE_DEFAULTS.redis.port;
/** Bounded under the agent's 3 s for one question: a hung server is no answer, not a stuck agent. */
const ASK = `timeout 2 redis-cli --no-auth-warning -h 127.0.0.1 -p ${PORT}`;

/**
 * Whether this redis accepts writes: ROLE's first line, `master` for the
 * primary and `slave` for a replica (connected or not). No answer (loading,
 * hung, stopped) tells the agent nothing new.
 */
export const REDIS_ROLE_COMMAND = `case "$(${ASK} role | head -n 1)" in master) echo primary ;; slave) echo replica ;; esac`;

/**
 * How long a replica may be silent and still count as in touch: each replica
 * acknowledges its offset every second (REPLCONF ACK), and INFO's `lag` is the
 * seconds since its last one.
 */
export const IN_TOUCH_LAG_SECONDS = 2;

/**
 * The agent's quorum question: "IN_TOUCH MEMBERS" (see @regulon/instance-agent).
 * In touch: this instance, and each replica INFO replication lists as
 * `state=online` whose last acknowledgement is at most IN_TOUCH_LAG_SECONDS
 * old; a replica cut off stops acknowledging, so the primary sees it go
 * within seconds (its own link gives up only after repl-timeout, which is
 * the manager's side, and the later of the two). Members: the instance count
 * the topology ConfigMap records (MEMBERS_KEY), or more when the headless
 * Service's DNS names more Pods (a scale-up the mounted ConfigMap has not
 * caught up with).
 */
export const REDIS_QUORUM_COMMAND = [
  `members=$(cat ${TOPOLOGY_MOUNT}/${MEMBERS_KEY} 2>/dev/null || echo 0)`,
  `pods=$(getent ahostsv4 "$PEERS_HOST" | awk '{print $1}' | sort -u | wc -l)`,
  `[ "$pods" -gt "$members" ] && members=$pods`,
  `info=$(${ASK} info replication | tr -d '\\r') || exit 1`,
  `printf '%s\\n' "$info" | grep -q '^role:master$' || exit 1`,
  // slaveN:ip=…,port=…,state=online,offset=…,lag=N
  `online=$(printf '%s\\n' "$info" | awk -F'[:,=]' '/^slave[0-9]+:/ { s = ""; l = -1; for (i = 2; i < NF; i += 2) { if ($i == "state") s = $(i + 1); if ($i == "lag") l = $(i + 1) } if (s == "online" && l >= 0 && l <= ${IN_TOUCH_LAG_SECONDS}) n++ } END { print n + 0 }')`,
  `echo "$((1 + online)) $members"`,
].join('; ');

/** Asks the local redis, as the agent's commands do (metrics.ts reads INFO with it). */
export const REDIS_ASK = ASK;
