# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# redis: redis-server and redis-cli 7.0 (Debian redis-server, redis-tools).
tag=7.0
main_package=redis-server
packages=(redis-server)
# The uid/gid of the official redis image, which the operator runs as.
users=("redis:999:999::/var/lib/redis:/usr/sbin/nologin")
run_as=999:999
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
# /data is where the operator's redis.conf keeps the dump, as in the official image.
workdir=/data
cmd=(redis-server)
ports=(6379/tcp)

finalize() {
  install -d -m 0750 -o 999 -g 999 "$1/data"
}
