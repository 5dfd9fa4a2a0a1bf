# shellcheck shell=bash disable=SC2034 # variables read by lib/image.sh
# mariadb: MariaDB 10.11 server, its client programs and mariadb-backup
# (Debian mariadb-server, mariadb-backup). Debian ships no MySQL server.
# rclone and zstd: the Database operator streams mariabackup's physical
# backups, compressed, to an object store and back (rclone rcat / cat);
# ca-certificates: the system CAs an object store's TLS is checked against
# when no CA of its own is given.
tag=10.11
main_package=mariadb-server
packages=(mariadb-server mariadb-backup rclone zstd ca-certificates)
# The uid/gid of the official mariadb and mysql images, which the operator runs as.
users=("mysql:999:999:MySQL Server:/nonexistent:/bin/false")
run_as=999:999
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
workdir=/var/lib/mysql
cmd=(mariadbd)
ports=(3306/tcp)

finalize() {
  # mariadb-server's postinst runs mysql_install_db into /var/lib/mysql: the
  # operator initializes its own data directory on its volume.
  find "$1/var/lib/mysql" -mindepth 1 -delete
  rm -rf "$1"/var/log/mysql/*
  # The server's default socket and pid file live in /run/mysqld (emptied by
  # mmdebstrap); writable by any uid, as in the official image.
  install -d -m 1777 -o 999 -g 999 "$1/run/mysqld"
}
