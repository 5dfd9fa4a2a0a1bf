# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# postgres: PostgreSQL 15 server and client programs (Debian postgresql-15),
# and pgBackRest (Debian pgbackrest), which the Database operator runs in the
# container for base backups and WAL archiving to an object store, and for
# restores. The binaries are in /usr/lib/postgresql/15/bin, first on PATH. No
# cluster and no entrypoint script: the operator runs initdb on its volume
# and gives the command.
tag=15
main_package=postgresql-15
packages=(postgresql-15 pgbackrest)
# No JIT compilation: LLVM and z3 are a third of the image (130 MB unpacked)
# and only llvmjit.so loads them. Without that file postgres quietly runs
# every query interpreted, as a build without --with-llvm does.
dpkg_options=(
  'path-exclude=/usr/lib/postgresql/*/lib/llvmjit*'
  'path-exclude=/usr/lib/postgresql/*/lib/bitcode/*'
  'path-exclude=/usr/lib/*/libLLVM-*'
  'path-exclude=/usr/lib/llvm-*'
  'path-exclude=/usr/lib/*/libz3.so*'
)
# The uid/gid of the official postgres image, which the operator runs as.
users=("postgres:999:999:PostgreSQL administrator:/var/lib/postgresql:/bin/bash")
run_as=999:999
env=(
  PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  LANG=C.UTF-8
)
workdir=/var/lib/postgresql
cmd=(postgres)
ports=(5432/tcp)

finalize() {
  # postgresql-common's postinst runs initdb for a default cluster "15/main":
  # data belongs on the operator's volume, created by its own initdb.
  rm -rf "$1/var/lib/postgresql/15" "$1/etc/postgresql/15" "$1"/var/log/postgresql/*
  # ssl-cert's postinst generated a "snakeoil" key pair: a private key shared
  # by every copy of the image (and different in every build) has no place here.
  rm -f "$1/etc/ssl/private/ssl-cert-snakeoil.key" "$1/etc/ssl/certs/ssl-cert-snakeoil.pem"
  # Debian's postgres puts its Unix socket in /var/run/postgresql (= /run,
  # emptied by mmdebstrap). Sticky and writable by all, as in the official
  # image, so a server running under any uid can use it.
  install -d -m 3777 -o 999 -g 999 "$1/run/postgresql"
}
