/**
 * The decision every replicating engine's start script ends with, from the
 * topology ConfigMap's rules (see plan.ts): only the named instance of a
 * never-initialised Database makes a new cluster; an empty volume of an
 * existing one is filled by cloning the primary; the named instance starts
 * writable only while no peer is; every other instance follows the primary
 * (rejoining, or cloned afresh when its data left the primary's history).
 * The script defines the shell functions it calls: designated, initialized,
 * primary_up, writable_peer, initialize, clone and `rejoin`.
 */
export function renderRoleDecision(o: {
  /** The data directory, as the script names it (`$PGDATA`). */
  dataDir: string;
  /** A `test` expression true when the data directory holds a cluster. */
  hasData: string;
  /** What the script calls an instance that follows the primary. */
  follower: string;
  /** The function that makes existing data follow the primary. */
  rejoin: string;
}): string {
  return `rm -rf "${o.dataDir}.new"
role=${o.follower}
if [ ! ${o.hasData} ]; then
  rm -rf "${o.dataDir}"
  if designated && ! initialized; then
    initialize
    role=primary
  else
    # An empty volume of an existing cluster: waits until a primary serves (after a failover if this was it).
    until ! designated && primary_up; do sleep 2; done
    clone
  fi
elif designated && ! writable_peer; then
  role=primary
else
  # Not the named primary, or named while another instance is still writable (the manager is moving the role).
  ${o.rejoin}
fi`;
}
