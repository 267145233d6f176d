#!/usr/bin/env bash
# get-python3.14.sh: install CPython 3.14 for csampler's Python tests, from Debian's own binary
# packages (unstable's python3.14, the only 3.14 the Debian registry offers: Debian 12 has none,
# and its source tarball is not served), into a directory of its own, never over the system's
# Python. Unstable's build needs unstable's C library, so that comes along too, and the
# interpreter is pointed at it (patchelf: its ELF interpreter and an rpath), so it runs beside
# Debian 12's libc without touching it.
#   scripts/get-python3.14.sh [DIR]   (default /opt/csampler-python3.14)
#   WITH_DEBUG=1 scripts/get-python3.14.sh   also its debug build, python3.14d (90 MB more):
#                                           one that keeps _PyEval_EvalFrameDefault's symbol
# Prints the interpreter's path. tests/python/t-python-versions.sh finds it there; where it is
# absent (CI), the 3.14 checks are SKIPPED with this script's name.
set -eu
dir=${1:-/opt/csampler-python3.14}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
pkgs="python3.14-minimal libpython3.14-minimal libpython3.14-stdlib python3.14 libc6 libmpdec4
      libexpat1 zlib1g libzstd1 libffi8 libbz2-1.0 liblzma5 libssl3t64 libuuid1 libsqlite3-0
      libtinfo6 libncursesw6 libreadline8t64"
py=$dir/usr/bin/python3.14
[ "${WITH_DEBUG:-}" = 1 ] && pkgs="$pkgs python3.14-dbg libpython3.14-dbg"
if [ -x "$py" ] && "$py" -c 'import zlib, threading' 2>/dev/null &&
	{ [ "${WITH_DEBUG:-}" != 1 ] || [ -x "$dir/usr/bin/python3.14d" ]; }; then
	echo "$py"
	exit 0
fi
for tool in curl xz dpkg-deb; do
	command -v "$tool" >/dev/null || { echo "get-python3.14: $tool is missing: apt-get install curl xz-utils dpkg" >&2; exit 1; }
done
if ! command -v patchelf >/dev/null; then
	apt-get install -y -qq patchelf >/dev/null 2>&1 ||
		{ echo "get-python3.14: patchelf is missing and could not be installed: apt-get install patchelf" >&2; exit 1; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! curl -fsS -m 300 -o "$work/Packages.xz" "$mirror/dists/sid/main/binary-amd64/Packages.xz"; then
	echo "get-python3.14: cannot fetch $mirror/dists/sid/main/binary-amd64/Packages.xz: is the Debian mirror reachable?" >&2
	exit 1
fi
xz -dc "$work/Packages.xz" >"$work/Packages"
mkdir -p "$dir"
for p in $pkgs; do
	f=$(awk -v p="$p" '$0 == "Package: " p { in_p = 1 } in_p && /^Filename:/ { print $2; exit }' "$work/Packages")
	if [ -z "$f" ]; then
		echo "get-python3.14: Debian unstable has no package $p now" >&2
		exit 1
	fi
	curl -fsS -m 300 -o "$work/p.deb" "$mirror/$f" ||
		{ echo "get-python3.14: cannot fetch $mirror/$f" >&2; exit 1; }
	dpkg-deb -x "$work/p.deb" "$dir"
done
lib=$dir/usr/lib/x86_64-linux-gnu
for exe in "$py" "$dir/usr/bin/python3.14d"; do
	[ -f "$exe" ] && patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$exe"
done
if ! "$py" -c 'import zlib, threading' >/dev/null; then
	echo "get-python3.14: $py was installed but does not run" >&2
	exit 1
fi
echo "$py"
