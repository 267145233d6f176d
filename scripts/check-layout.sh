#!/usr/bin/env bash
# check-layout.sh: enforce the include rules of the README's design section. Each folder of
# profiler/ may include only the folders listed for it below, in the "folder/file.h" form (not
# <folder/file.h>, no . or .. in the path), unit tests too; no file declares another folder's
# function by hand (extern or a prototype); target/ and kernels/ never reach profiler/; the
# in-target library (profiler/inject/) includes only its own folder and base/pywalk.h (the
# CPython frame walk it compiles in) and no elfutils, and once
# built it imports nothing that prints or exits (make check-layout and make test build it
# first where the CUDA toolkit is).
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
	[export]="base analysis"
	[cmd]="base format sampler unwind record analysis export inject"
	[inject]="base"
	[main.c]="base cmd"
	[flamegraph]="base analysis"
)
# Where a folder may take only some files of another: record/ only the wire contracts of
# inject/ (the file format, the attach entry); sampler/ of unwind/ only the snapshot struct, the
# off-CPU states (one enum for every backend) and the flat CFI rows the BPF walker loads; the
# in-target library of base/ only the CPython frame walk it compiles in (base/pywalk.c, libc
# only, the recorder's too).
declare -A only_file=([record:inject]="inject/protocol.h inject/attach.h" [cmd:inject]="inject/protocol.h"
	[sampler:unwind]="unwind/unwind.h unwind/offcpu.h unwind/cfitable.h"
	[inject:base]="base/pywalk.h")
# Unit tests (*_test.c) follow their folder's rule, plus the reader that checks what a writer
# wrote (analysis/profile.h, profile_builder.h) and the command table, to drive a command's
# option errors (cmd/cmds.h).
test_extra="analysis/profile.h analysis/profile_builder.h cmd/cmds.h"
bad=0
violation() { echo "layout: $1" >&2; bad=1; }

# The folder key of a source file: profiler/<key>/..., profiler/main.c, flamegraph.
# (Parameter expansion, not a subshell: the checks below run once per include line.)
folder_of() {
	case $1 in
	flamegraph/*) key=flamegraph ;;
	profiler/*/*) key=${1#profiler/}; key=${key%%/*} ;;
	*) key=${1#profiler/} ;;
	esac
}

check_include() { # $1 file, $2 its folder key, $3 form (" or <), $4 the included path
	local f=$1 key=$2 form=$3 inc=$4 dir ok
	local extra=; case $f in *_test.c) extra=$test_extra ;; esac
	dir=${inc%%/*}
	if [ "$form" = '<' ]; then             # <folder/file.h>: only system headers
		[ "$dir" != "$inc" ] && [ -d "profiler/$dir" ] &&
			violation "$f includes <$inc>: use the \"folder/file.h\" form"
		return
	fi
	case /$inc/ in
	*/../*|*/./*)                             # no way round the rules through ..
		# cmd/ reaches the renderer beside profiler/ as "../flamegraph/file.h", no deeper
		[ "$key" = cmd ] && [[ $inc =~ ^\.\./flamegraph/[A-Za-z0-9_]+\.h$ ]] && return
		violation "$f includes \"$inc\": use the \"folder/file.h\" form (no . or .. in the path)"
		return ;;
	esac
	[ "$dir" = "$inc" ] && return             # same-folder include ("x.h")
	[ "$dir" = "$key" ] && return
	[ -d "profiler/$dir" ] || return             # not one of ours (e.g. a system subdir)
	[[ " $extra " == *" $inc "* ]] && return
	ok=0
	for a in ${allow[$key]}; do [ "$a" = "$dir" ] && ok=1; done
	if [ $ok = 1 ] && [ -n "${only_file[$key:$dir]:-}" ] && ! [[ " ${only_file[$key:$dir]} " == *" $inc "* ]]; then
		ok=0
	fi
	[ $ok = 1 ] || violation "$f includes \"$inc\": $key/ may include only: ${allow[$key]:-nothing of profiler/}${only_file[$key:$dir]:+ (of $dir/, only ${only_file[$key:$dir]})}${extra:+ (a test also $extra)}"
}

sources=$(find profiler flamegraph -name '*.[ch]' | sort)
declare -A has_rule=()
for f in $sources; do
	folder_of "$f"
	if [ -z "${allow[$key]+set}" ]; then
		violation "$f: folder '$key' has no include rule: add it to scripts/check-layout.sh and the README"
		continue
	fi
	has_rule[$f]=1
done
# Every include line of every source in one awk pass ("FILE FORM PATH"); a process per file
# made the check take over a minute on a loaded 2-CPU machine, and t-layout runs it 20 times.
while IFS=' ' read -r f form inc; do
	[ -n "${has_rule[$f]:-}" ] || continue
	folder_of "$f"
	check_include "$f" "$key" "$form" "$inc"
done < <(awk '
	/^[ \t]*#[ \t]*include[ \t]*"[^"]*"/ { s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print FILENAME, "\"", s; next }
	/^[ \t]*#[ \t]*include[ \t]*<[^>]*>/ { s = $0; sub(/^[^<]*</, "", s); sub(/>.*/, "", s); print FILENAME, "<", s }
' $sources)

# No way round the includes by declaring another folder's function by hand: the functions each
# folder declares in its headers or defines in its .c files (outside its tests), then every
# extern declaration and every one-line prototype in a .c file that names one of another folder.
# One awk reads the sources twice: the first pass learns each function's folder (the first
# file to declare or define it), the second reports the hand-made declarations.
while IFS= read -r msg; do violation "$msg"; done < <(awk '
	function folder(f,   r) {
		if (f ~ /^flamegraph\//) return "flamegraph"
		r = f; sub(/^profiler\//, "", r)
		if (r ~ /\//) sub(/\/.*/, "", r)
		return r
	}
	function declared_name(line,   head) {  # the identifier right before the first "("
		head = line; sub(/\(.*/, "", head); sub(/[ \t]+$/, "", head)
		if (!match(head, /[A-Za-z_][A-Za-z0-9_]*$/)) return ""
		return substr(head, RSTART, RLENGTH)
	}
	FNR == 1 { pass2 = (seen[FILENAME]++ > 0); key = folder(FILENAME); isc = (FILENAME ~ /\.c$/); istest = (FILENAME ~ /_test\.c$/) }
	!pass2 {
		if (istest) next
		line = $0
		sub(/^__attribute__\(\([a-z_]+(\([^()]*\))?\)\)[ \t]+/, "", line)
		if (line !~ /^[A-Za-z_][A-Za-z0-9_ *]*[ *][A-Za-z_][A-Za-z0-9_]*\(/) next
		if (line ~ /^(static|typedef|struct|enum|union|extern|return|if|else|for|while|switch)([^A-Za-z0-9_]|$)/) next
		if (isc && line ~ /;[ \t]*$/) next     # .c: definitions only
		name = declared_name(line)
		if (name != "" && !(name in owner)) owner[name] = key
		next
	}
	{
		if (!($0 ~ /^[ \t]*extern[ \t][^;]*\(/ || (isc && $0 ~ /^[A-Za-z_][^=;(]*[ *][A-Za-z_][A-Za-z0-9_]*\(.*\);[ \t]*$/))) next
		if ($0 ~ /^(static|typedef|return)([^A-Za-z0-9_]|$)/) next
		name = declared_name($0)
		if (name in owner && owner[name] != key)
			printf "%s declares %s, a function of %s/, by hand: include its header (the rules above decide whether %s/ may)\n", FILENAME, name, owner[name], key
	}
' $sources $sources)

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
