# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# app: the smallest application that proves a MyApp's wiring. It serves HTTP
# on $PORT (default 8080): `GET /` is 200 "ok"; `GET /readyz` is 200 only when
# the database answers a query and, when CACHE_HOST is set, the cache answers
# an authenticated command, each with exactly the env the MyApp controller
# injects (DATABASE_*, CACHE_*); otherwise 503 naming the failing dependency.
# A readiness probe on /readyz therefore means "this Pod can use what it was
# given", not "this process runs".
#
# Why socat and a shell handler: socat (fork per connection) is the whole HTTP
# server and the handler is a page of bash that runs the engines' own clients,
# which are exactly what the client image already trusts: psql, the mariadb
# client, redis-cli. Memcached needs no client: its ASCII auth (the
# --auth-file the Cache controller configures) is a `set` and a `version` over
# bash's /dev/tcp. A compiled server would need a toolchain the image build
# does not have, and busybox httpd's CGI adds nothing socat lacks.
#
# Secrets stay off command lines (another process of the same uid could read
# them in /proc) and out of responses and logs: psql gets DATABASE_URL without
# its password and the password, percent-decoded from that same URL, in
# PGPASSWORD; mariadb gets DATABASE_PASSWORD in MYSQL_PWD; redis-cli gets
# CACHE_PASSWORD in REDISCLI_AUTH. A failing check says which dependency and
# which client exit status, never the client's own message (it can quote a
# malformed URL, password and all).
tag=12
# Tagged with the Debian release it comes from (base-files 12.x is bookworm).
main_package=base-files
packages=(socat postgresql-client-15 mariadb-client-core redis-tools)
# nobody: the application owns no files.
run_as=65534:65534
# psql straight from its versioned directory: /usr/bin/psql is Debian's perl
# wrapper, which picks a cluster from /etc/postgresql and has nothing to pick.
# RES_OPTIONS: glibc's resolver asks for A and AAAA at once from one UDP
# socket, and a Pod's first lookups on the testenv's real node lost a reply
# now and then (seen: a 5 s stall, the resolver's default timeout, on the
# first lookup in a new Pod), longer than the 3 s a check may take. One query
# at a time on a fresh socket, and a 1 s timeout with one retry, keep a lost
# reply from failing a check.
env=(
  PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  LANG=C.UTF-8
  'RES_OPTIONS=single-request-reopen timeout:1 attempts:2'
)
cmd=(/usr/local/bin/app-serve)
ports=(8080/tcp)

finalize() {
  # The handler and the server are written here, in the recipe, so that
  # editing them changes the image's cache key like any other recipe line.
  install -d "$1/usr/local/bin"
  cat >"$1/usr/local/bin/app-serve" <<'EOF'
#!/bin/sh
# One handler process per connection; -T closes a connection idle for 10 s.
echo "app: serving HTTP on :${PORT:-8080} (GET / and GET /readyz)" >&2
exec socat -T 10 "TCP-LISTEN:${PORT:-8080},reuseaddr,fork" EXEC:/usr/local/bin/app-http
EOF
  cat >"$1/usr/local/bin/app-http" <<'EOF'
#!/bin/bash
# One HTTP/1.1 request on stdin, its response on stdout, then close.
set -u
# Each dependency check is bounded, so that a probe (timeout 5 s in the MyApp
# controller) gets an answer rather than a hung connection.
CHECK_SECONDS=3

# respond STATUS BODY. A failure is also logged (the body never holds a secret).
respond() {
  [[ "$1" == 200* ]] || echo "app: ${target:-?} $1: $2" >&2
  printf 'HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$1" "$((${#2} + 1))" "$2"$'\n'
}

# postgresql://user:password@host:port/db: the URL minus its password on the
# command line, the password (percent-decoded) in PGPASSWORD.
check_postgres() {
  local url="$DATABASE_URL" rest userinfo password=''
  rest="${url#*://}"
  if [[ "$rest" == *@* ]]; then
    userinfo="${rest%%@*}"
    if [[ "$userinfo" == *:* ]]; then
      password="${userinfo#*:}"
      url="${url%%://*}://${userinfo%%:*}@${rest#*@}"
    fi
  fi
  local decoded
  printf -v decoded '%b' "${password//%/\\x}"
  local out
  out="$(PGPASSWORD="$decoded" PGCONNECT_TIMEOUT="$CHECK_SECONDS" timeout "$CHECK_SECONDS" \
    psql "$url" -XAtq -c 'select 1' 2>/dev/null)"
  local rc=$?
  [ "$rc" -eq 0 ] && [ "$out" = 1 ] && return 0
  why="psql exit $rc"
  return 1
}

check_mysql() {
  local out
  out="$(MYSQL_PWD="${DATABASE_PASSWORD:-}" timeout "$CHECK_SECONDS" mariadb --no-defaults \
    --connect-timeout="$CHECK_SECONDS" -h "$DATABASE_HOST" -P "$DATABASE_PORT" -u "$DATABASE_USER" \
    ${DATABASE_NAME:+-D "$DATABASE_NAME"} -N -B -e 'select 1' 2>/dev/null)"
  local rc=$?
  [ "$rc" -eq 0 ] && [ "$out" = 1 ] && return 0
  why="mariadb exit $rc"
  return 1
}

check_redis() {
  local out
  if [ -n "${CACHE_PASSWORD:-}" ]; then
    out="$(REDISCLI_AUTH="$CACHE_PASSWORD" timeout "$CHECK_SECONDS" redis-cli --no-auth-warning \
      -h "$CACHE_HOST" -p "$CACHE_PORT" PING 2>/dev/null)"
  else
    out="$(timeout "$CHECK_SECONDS" redis-cli -h "$CACHE_HOST" -p "$CACHE_PORT" PING 2>/dev/null)"
  fi
  [ "$out" = PONG ] && return 0
  why="redis-cli did not get PONG"
  return 1
}

# memcached's ASCII auth (--auth-file): `set <any key> 0 0 <length>` with
# "user password" as the value must answer STORED before anything else is
# served, then `version` must answer VERSION. The user is CACHE_USER, or the
# URL's (memcached://user:password@host:port).
memcached_session() {
  local line token
  exec 3<>"/dev/tcp/$CACHE_HOST/$CACHE_PORT" || return 1
  if [ -n "${CACHE_PASSWORD:-}" ]; then
    token="$CACHE_AUTH_USER $CACHE_PASSWORD"
    printf 'set auth 0 0 %d\r\n%s\r\n' "${#token}" "$token" >&3
    IFS= read -r line <&3
    [ "${line%$'\r'}" = STORED ] || return 2
  fi
  printf 'version\r\n' >&3
  IFS= read -r line <&3
  [[ "$line" == VERSION* ]] || return 3
}
export -f memcached_session

check_memcached() {
  local user=''
  if [[ "$CACHE_URL" == *://*@* ]]; then
    user="${CACHE_URL#*://}"
    user="${user%%@*}"
    user="${user%%:*}"
  fi
  # A function run by `timeout`: bash's /dev/tcp has no connect timeout of its own.
  CACHE_AUTH_USER="${CACHE_USER:-$user}" timeout "$CHECK_SECONDS" bash -c memcached_session 2>/dev/null
  local rc=$?
  [ "$rc" -eq 0 ] && return 0
  why="memcached session exit $rc"
  return 1
}

readyz() {
  local why=''
  case "${DATABASE_URL:-}" in
    '') ;;
    postgres://* | postgresql://*) check_postgres || { respond '503 Service Unavailable' "database: $why"; return; } ;;
    mysql://* | mariadb://*) check_mysql || { respond '503 Service Unavailable' "database: $why"; return; } ;;
    *) respond '503 Service Unavailable' 'database: DATABASE_URL has a scheme this app does not speak'; return ;;
  esac
  if [ -n "${CACHE_HOST:-}" ]; then
    case "${CACHE_URL:-}" in
      redis://*) check_redis || { respond '503 Service Unavailable' "cache: $why"; return; } ;;
      memcached://*) check_memcached || { respond '503 Service Unavailable' "cache: $why"; return; } ;;
      *) respond '503 Service Unavailable' 'cache: CACHE_URL has a scheme this app does not speak'; return ;;
    esac
  fi
  # What answered, by kind only: the URLs carry passwords.
  local database=answered cache=answered
  [ -n "${DATABASE_URL:-}" ] || database='not configured'
  [ -n "${CACHE_HOST:-}" ] || cache='not configured'
  respond '200 OK' "ready: database $database, cache $cache"
}

IFS=' ' read -r -t 5 method target _ || exit 0
# Read the headers to the blank line: closing with unread input would reset
# the connection under the response.
while IFS= read -r -t 2 line; do [ -z "${line%$'\r'}" ] && break; done
case "$method $target" in
  'GET /') respond '200 OK' ok ;;
  'GET /readyz') readyz ;;
  *) respond '404 Not Found' 'not found' ;;
esac
EOF
  chmod 0755 "$1/usr/local/bin/app-serve" "$1/usr/local/bin/app-http"
}
