# shellcheck shell=bash
# The part every cached build shares (tools/control-plane, tools/prometheus):
# a bin dir outside the repository keyed by pinned versions, one build at a
# time per machine, and a staging dir moved into place only when complete, so
# an interrupted build leaves nothing that looks finished.
#
# The caller sets `cache_root` and `bin`, defines `complete` (true when every
# output is in `bin`), then:
#   begin_cached_build "$@"   # prints bin and exits if done (or --print); else
#                             # takes the lock and sets `staging` and `build_started`
#   ...build into "$staging"...
#   finish_cached_build TAG   # moves staging to bin, prints bin

begin_cached_build() {
  if [ "${1:-}" = "--print" ] || complete; then
    echo "$bin"
    exit 0
  fi
  mkdir -p "$cache_root"
  # A second caller waits here, then finds the build done.
  exec 9>"$cache_root/.build.lock"
  flock 9
  if complete; then
    echo "$bin"
    exit 0
  fi
  staging="$(mktemp -d "$cache_root/.staging.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: staging is fixed from here on
  trap "rm -rf '$staging'" EXIT
  build_started=$(date +%s)
}

finish_cached_build() {
  mkdir -p "$(dirname "$bin")"
  rm -rf "$bin"
  mv "$staging" "$bin"
  trap - EXIT
  echo "[$1] built in $(($(date +%s) - build_started)) s into $bin" >&2
  echo "$bin"
}
