#!/bin/bash
# debian-base.sh [NAME]: makes a Debian bookworm base image without a
# registry, for building lockstep's image offline: debootstrap (minbase,
# with iproute2) from the mirror apt uses, imported into the local
# containers store as NAME (default localhost/lockstep-base:bookworm).
# Needs root, debootstrap and podman or buildah.
set -euo pipefail
name=${1:-localhost/lockstep-base:bookworm}
mirror=${MIRROR:-$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -n 1)}
mirror=${mirror:-http://deb.debian.org/debian}
root=$(mktemp -d /tmp/lockstep-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=iproute2 bookworm "$root" "$mirror"
# What an image does not need: package lists and caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
if command -v podman >/dev/null; then
	tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$name" >/dev/null
else
	c=$(buildah from scratch)
	buildah copy "$c" "$root" / >/dev/null
	buildah config --cmd /bin/bash "$c"
	buildah commit "$c" "$name" >/dev/null
	buildah rm "$c" >/dev/null
fi
echo "base image $name"
