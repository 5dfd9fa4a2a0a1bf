# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# client: what a test runs inside the cluster to reach the engines and check
# DNS: psql 15, the mariadb client, redis-cli, memcached's memc* tools (with
# SASL's PLAIN mechanism), curl, dig/host, getent (libc), and python3 with
# the postgres and MariaDB drivers, which the replication tests' load writer
# uses (a session per write without a process per write). Sleeps by default,
# for `kubectl exec`.
tag=12
# Tagged with the Debian release it comes from (base-files 12.x is bookworm).
main_package=base-files
packages=(postgresql-client-15 mariadb-client-core redis-tools libmemcached-tools
  libsasl2-modules ca-certificates curl bind9-dnsutils python3-psycopg2 python3-pymysql)
# nobody: the client needs to own nothing.
run_as=65534:65534
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
cmd=(sleep infinity)
