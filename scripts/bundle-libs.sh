#!/usr/bin/env bash
# bundle-libs.sh: copy the shared libraries that bin/csampler and lib/*.so need, other than the
# C and C++ runtimes every Linux machine has, into lib/, where csampler finds them through its
# $ORIGIN/../lib run path. For running a build from this machine on another one that lacks
# them (a GPU node without elfutils or libunwind): copy bin/ and lib/ together.
# Usage: scripts/bundle-libs.sh   (after make; `make bundle` runs it)
set -eu
cd "$(dirname "$0")/.."
mkdir -p lib
objs="bin/csampler"
for so in lib/*.so; do
	[ -f "$so" ] && case $so in lib/libcsampler-*) objs="$objs $so" ;; esac
done
copied=""
for lib in $(ldd $objs 2>/dev/null | awk '/=> \// {print $3}' | sort -u); do
	case $(basename "$lib") in
	libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libutil.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) continue ;;
	libcupti.so*|libcuda.so*|libcudart.so*|libnvidia*) continue ;; # the GPU machine's own
	esac
	# Already bundled (the run path found it in lib/ itself): nothing to copy.
	[ "$(readlink -f "$lib")" = "$(readlink -f "lib/$(basename "$lib")" 2>/dev/null)" ] && continue
	cp -L "$lib" "lib/$(basename "$lib")"
	copied="$copied $(basename "$lib")"
done
echo "bundle-libs: lib/ now holds:$copied"
