#!/bin/sh
# Builds the example's two images into podman's local store, offline: no
# registry, no base image. Each root filesystem is assembled from the
# host's own binaries and the libraries ldd names (Debian's redis-server
# 7, dash as /bin/sh, cat), then committed with buildah from scratch:
#   localhost/lockstep-redis:latest     node.sh, redis-server, redis-sentinel
#   localhost/lockstep-kvclient:latest  the workload client, built static
# Installs buildah, podman and redis-server from apt when missing (root).
# Takes about 15 s on this machine (2 CPUs); rerun it after changing node.sh.
#   examples/images/build.sh [--oci DIR]   # --oci: also save both as OCI layouts in DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
missing=""
command -v buildah >/dev/null || missing="$missing buildah"
command -v podman >/dev/null || missing="$missing podman"
[ -x /usr/bin/redis-server ] || missing="$missing redis-server"
if [ -n "$missing" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "build.sh: missing$missing; as root: apt-get install$missing" >&2
		exit 2
	fi
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# copy FILE...: each file and the shared libraries it loads, at their paths.
copy() {
	rootfs=$1
	shift
	for f in "$@"; do
		cp -L --parents "$f" "$rootfs"
		ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' |
			while read -r lib; do cp -L --parents "$lib" "$rootfs"; done
	done
}

# build NAME ROOTFS BUILDAH-CONFIG-FLAGS...: commits ROOTFS as localhost/NAME.
build() {
	name=$1 rootfs=$2
	shift 2
	ctr=$(buildah from scratch)
	buildah copy --quiet "$ctr" "$rootfs" / >/dev/null
	buildah config "$@" "$ctr"
	buildah commit --quiet --rm "$ctr" "localhost/$name:latest" >/dev/null
	echo "built localhost/$name:latest"
}

redis=$work/redis
mkdir -p "$redis/tmp" "$redis/etc" "$redis/var/lib/redis" "$redis/usr/local/bin"
chmod 1777 "$redis/tmp"
copy "$redis" /usr/bin/redis-server /bin/sh /usr/bin/cat
ln -s redis-server "$redis/usr/bin/redis-sentinel"
cp "$here/node.sh" "$redis/usr/local/bin/node.sh"
echo "root:x:0:0:root:/root:/bin/sh" >"$redis/etc/passwd"
build lockstep-redis "$redis" --entrypoint '["/usr/local/bin/node.sh"]' \
	--env PATH=/usr/local/bin:/usr/bin:/bin --workingdir /var/lib/redis --port 6379 --port 26379

client=$work/kvclient
mkdir -p "$client/usr/local/bin" "$client/tmp"
(cd "$root/testdata/workload" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go build -o "$client/usr/local/bin/kvclient" ./kvclient)
build lockstep-kvclient "$client" --entrypoint '["/usr/local/bin/kvclient"]' --env PATH=/usr/local/bin

if [ "${1:-}" = "--oci" ]; then
	mkdir -p "$2"
	for name in lockstep-redis lockstep-kvclient; do
		rm -rf "$2/$name"
		podman save --quiet --format oci-dir -o "$2/$name" "localhost/$name:latest"
		echo "saved $2/$name (image: $2/$name in a spec)"
	done
fi
