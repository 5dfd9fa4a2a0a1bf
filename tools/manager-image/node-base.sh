# shellcheck shell=bash disable=SC2034 # variables read by tools/images/lib/image.sh
# node-base: a stand-in for node:${NODE_VERSION}-bookworm-slim, the manager
# Dockerfile's FROM, since no image registry is reachable. Laid out as the
# official image is: Debian bookworm with apt (the Dockerfile's runtime stage
# runs apt-get), the user node (1000:1000), the Node binary in /usr/local/bin
# and the npm that Node release ships in /usr/local/lib/node_modules/npm, with
# the npm and npx links beside node. Not included: corepack and yarn 1 (the
# official image carries both; the Dockerfile uses neither), Node's C headers
# in /usr/local/include (for native addons, which the manager has none of) and
# the official docker-entrypoint.sh (both stages set their own command).
#
# build.sh sets NODE_BINARY (the repository's node_modules/node, checked
# against the Dockerfile's NODE_VERSION), NODE_VERSION, NPM_TARBALL (npm's
# package from the npm registry).
tag="$NODE_VERSION-bookworm-slim"
main_package=base-files
variant=apt
# What `ldd node` asks for beyond the essential set (libc, libgcc-s1).
packages=(libstdc++6)
users=("node:1000:1000::/home/node:/bin/bash")
env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "NODE_VERSION=$NODE_VERSION")
cmd=(node)

finalize() {
  local root="$1"
  install -d -m 0755 -o 1000 -g 1000 "$root/home/node"
  # As Debian's official container images do: apt keeps no downloaded
  # packages and no binary caches, and fetches no translations, so that an
  # `apt-get install` layer holds the package and nothing else.
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  install -D -m 0755 "$NODE_BINARY" "$root/usr/local/bin/node"
  ln -s node "$root/usr/local/bin/nodejs"
  mkdir -p "$root/usr/local/lib/node_modules/npm"
  tar -xzf "$NPM_TARBALL" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 \
    --no-same-owner --no-same-permissions
  chmod -R u+rwX,go+rX,go-w "$root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
}
