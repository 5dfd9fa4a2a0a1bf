# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# memcached: memcached 1.6 (Debian memcached). Two ways to authenticate:
# memcached's own --auth-file (ASCII protocol), or SASL (-S, binary protocol):
# Debian builds memcached with Cyrus SASL, so the PLAIN mechanism's module and
# saslpasswd2, to fill a sasldb, come along (see tools/images/README.md).
tag=1.6
main_package=memcached
# libstdc++6: the instance agent's Node (copied in from the manager image, it
# publishes memcached's metrics) needs it, and memcached does not pull it in.
packages=(memcached libsasl2-modules sasl2-bin libstdc++6)
# The uid/gid of the official memcached image, which the operator runs as.
users=("memcache:11211:11211:Memcached:/nonexistent:/usr/sbin/nologin")
run_as=11211:11211
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
cmd=(memcached)
ports=(11211/tcp)

finalize() {
  # sasl2-bin's postinst creates an empty user database, different in every
  # build (Berkeley DB pages are not reproducible): whoever turns SASL on
  # brings a sasldb of their own (saslpasswd2 -f PATH) and a sasl2 config.
  rm -f "$1/etc/sasldb2"
}
