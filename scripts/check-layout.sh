#!/usr/bin/env bash
# check-layout.sh: enforce the include rules of the README's design section. Each folder of
# profiler/ may include only the folders listed for it below; target/ and kernels/ never reach
# profiler/; the in-target library (profiler/inject/) includes only its own folder and no
# elfutils, and once built it imports nothing that prints or exits.
# Usage: scripts/check-layout.sh [ROOT]   (ROOT defaults to the repository; `make check-layout`)
# Prints one line per violation and exits 1 when there is any.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# folder -> folders it may include ("folder/file.h"); its own folder is always allowed.
declare -A allow=(
	[base]=""
	[format]="base"
	[sampler]="base unwind"
	[unwind]="base format"
	[record]="base format sampler unwind inject"
	[analysis]="base format"
	[export]="base format analysis"
	[cmd]="base format sampler unwind record analysis export inject"
	[inject]=""
	[main.c]="base cmd"
	[flamegraph]="base analysis"
)
# record/ may take only the wire contracts from inject/ (the file format, the attach entry).
declare -A only_file=([record:inject]="inject/protocol.h inject/attach.h" [cmd:inject]="inject/protocol.h")
bad=0
violation() { echo "layout: $1" >&2; bad=1; }

check_file() { # $1 file, $2 its folder key
	local f=$1 key=$2 inc dir ok
	while IFS= read -r inc; do
		dir=${inc%%/*}
		[ "$dir" = "$inc" ] && continue             # same-folder include ("x.h")
		[ "$dir" = ".." ] && { [ "$key" = cmd ] && [ "${inc#../flamegraph/}" != "$inc" ] && continue; \
			violation "$f includes \"$inc\": use the \"folder/file.h\" form"; continue; }
		[ "$dir" = "$key" ] && continue
		[ -d "profiler/$dir" ] || continue             # not one of ours (e.g. a system subdir)
		ok=0
		for a in ${allow[$key]}; do [ "$a" = "$dir" ] && ok=1; done
		if [ $ok = 1 ] && [ -n "${only_file[$key:$dir]:-}" ] && ! [[ " ${only_file[$key:$dir]} " == *" $inc "* ]]; then
			ok=0
		fi
		[ $ok = 1 ] || violation "$f includes \"$inc\": $key/ may include only: ${allow[$key]:-nothing of profiler/}${only_file[$key:$dir]:+ (of $dir/, only ${only_file[$key:$dir]})}"
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
}

for f in $(find profiler -name '*.[ch]' | sort); do
	case $f in *_test.c) continue ;; esac   # unit tests may reach across folders
	rel=${f#profiler/}
	case $rel in
	*/*) key=${rel%%/*} ;;
	*) key=$rel ;;
	esac
	if [ -z "${allow[$key]+set}" ]; then
		violation "$f: folder '$key' has no include rule: add it to scripts/check-layout.sh and the README"
		continue
	fi
	check_file "$f" "$key"
done
for f in $(find flamegraph -name '*.[ch]' ! -name '*_test.c' | sort); do
	check_file "$f" flamegraph
done
# The workload never depends on the profiler.
for f in $(find target kernels -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' | sort); do
	if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*(profiler/|(base|format|sampler|unwind|record|analysis|inject|cmd|export)/)' "$f"; then
		violation "$f includes profiler code: target/ and kernels/ must build without profiler/"
	fi
done
# The in-target library: no elfutils, nothing of the recorder.
for f in $(find profiler/inject -name '*.[ch]' 2>/dev/null | sort); do
	if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(elfutils/|libelf|gelf|dwarf|libdw)' "$f"; then
		violation "$f includes elfutils: the in-target library must not"
	fi
done
# Once built, it imports nothing that prints to the target's terminal or ends its process.
if [ -f lib/libcsampler-cupti.so ]; then
	for sym in $(nm -D --undefined-only lib/libcsampler-cupti.so 2>/dev/null | awk '{print $NF}' | sed 's/@.*//'); do
		case $sym in
		printf|fprintf|vfprintf|puts|fputs|putchar|perror|exit|_exit|abort|fopen|popen|system|cs_*)
			violation "lib/libcsampler-cupti.so imports $sym: the in-target library must not print, exit or use the recorder's code" ;;
		esac
	done
fi
exit $bad
