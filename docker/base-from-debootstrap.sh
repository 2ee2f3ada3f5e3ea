#!/bin/sh
# docker/base-from-debootstrap.sh - makes the `debian:12` base image the
# Dockerfile starts from out of Debian's own mirror, for machines that reach
# Debian's packages but not Docker Hub (a mirror-only build network). The
# image is a minbase bookworm with the same apt sources as the official one
# (bookworm, bookworm-updates, bookworm-security), tagged
# docker.io/library/debian:12 so that `FROM debian:12` finds it locally.
#
#   sudo docker/base-from-debootstrap.sh [MIRROR]   (default http://deb.debian.org/debian)
#
# CONTAINER=docker|podman picks the engine (default: docker when its engine
# answers, else podman). Needs root and the debootstrap package. Safe to run
# again: the tag is replaced.
set -eu

MIRROR=${1:-http://deb.debian.org/debian}
if [ -z "${CONTAINER:-}" ]; then
	if docker info >/dev/null 2>&1; then CONTAINER=docker; else CONTAINER=podman; fi
fi
command -v debootstrap >/dev/null || {
	echo "base-from-debootstrap: debootstrap is missing (apt-get install debootstrap)" >&2
	exit 1
}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
	tail -20 "$root.log" >&2
	rm -f "$root.log"
	exit 1
}
rm -f "$root.log"
security=$(echo "$MIRROR" | sed 's|/debian$|/debian-security|')
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | $CONTAINER import --change 'CMD ["bash"]' - docker.io/library/debian:12
echo "base-from-debootstrap: docker.io/library/debian:12 built from $MIRROR"
