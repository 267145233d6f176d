#!/usr/bin/env bash
# Load: 8 busy threads on 2 cores (taskset), at -F 999 and at the highest rate the kernel allows
# (kernel.perf_event_max_sample_rate). Lost samples are counted and reported the same in the
# summary and in the file; csampler reports its own CPU time against the wall time and the
# target's CPU time; and nothing stalls: csampler ends soon after the target does. The figures
# are in the PASS lines (tests/out/tests_record_t-load.sh.log).
source "$CSAMPLER_ROOT/tests/lib.sh"
W=$TPROG/rec-worker

pin=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	pin=(taskset -c 0,1)
	cores="2 cores"
else
	cores="$(nproc) core(s), not pinned"
fi

# load FREQ SECONDS BOUND PCT [OPTION...]: record 8 threads burning SECONDS of wall time at
# -F FREQ; csampler must exit within BOUND seconds of the target's end (the time it wrote
# done.txt), and more than PCT% of the samples are in the target's code.
load() {
	local freq=$1 secs=$2 bound=$3 pct=$4 name="load -F $1, 8 threads, $cores"
	shift 4
	local data=load-$freq.data err=err-$freq.txt done=$T/done-$freq.txt
	local start end rc
	start=$(date +%s.%N)
	timeout 600 "${pin[@]}" "$CSAMPLER" record -F "$freq" "$@" -o "$data" -- "$W" 8 "$secs" "done:$done" >/dev/null 2>"$err"
	rc=$?
	end=$(date +%s.%N)
	if [ "$rc" != 0 ] || [ ! -s "$done" ]; then
		fail "$name: rc $rc: $(head -c 300 "$err")"
		return
	fi
	local target_s after_s
	target_s=$(echo "$(stat -c %.9Y "$done") - $start" | bc)
	after_s=$(echo "$end - $(stat -c %.9Y "$done")" | bc)
	[ "$(echo "$after_s < $bound" | bc)" = 1 ] \
		&& pass "$name: no stall: the target ran ${target_s}s (${secs}s of work), csampler ended ${after_s}s after it" \
		|| fail "$name: csampler ended ${after_s}s after the target (bound ${bound}s)"

	# lost samples: the summary's figure is the file's, and a warning names the remedy
	local summary lost_summary lost_file nsamples
	summary=$(grep -E '^csampler: [0-9]+ samples, [0-9]+ lost' "$err")
	lost_summary=$(echo "$summary" | sed -E 's/^csampler: [0-9]+ samples, ([0-9]+) lost.*/\1/')
	"$CSAMPLER" info -i "$data" --format json >"$data.json" 2>/dev/null
	lost_file=$(json_get "$data.json" j.lost)
	nsamples=$(json_get "$data.json" j.samples)
	if [ -n "$summary" ] && [ "$lost_summary" = "$lost_file" ] &&
		{ [ "$lost_file" = 0 ] || grep -q "warning: $lost_file samples were lost: the ring buffers overflowed; use a larger -m or a lower -F" "$err"; }; then
		pass "$name: $nsamples samples, $lost_file lost, counted in the file and reported"
	else
		fail "$name: lost: summary '${lost_summary}', file '${lost_file}': $(head -c 400 "$err")"
	fi

	# csampler's own cost
	local cost
	cost=$(grep -E "^csampler: own CPU [0-9.]+ s \(user [0-9.]+, system [0-9.]+\): [0-9.]+% of the [0-9.]+ s wall time, [0-9.]+% of the target's [0-9.]+ s CPU$" "$err")
	[ -n "$cost" ] && pass "$name: ${cost#csampler: }" || fail "$name: no own-CPU line: $(head -c 400 "$err")"
	# ... and, when the command ended within the recording, how much of it came while it ran:
	# the three parts add up to the whole (each rounded to 10 ms)
	local during own
	if [ -z "$*" ]; then
		during=$(grep -E "^csampler: own CPU while the command ran: [0-9.]+ s \([0-9.]+ s before it started, -?[0-9.]+ s since it ended\)$" "$err")
		own=$(echo "$cost" | sed -E 's/^csampler: own CPU ([0-9.]+) s.*/\1/')
		if [ -n "$during" ] && echo "$during" | sed -E 's/[^0-9.-]+/ /g' |
			awk -v own="$own" '{ d = $1 + $2 + $3 - own; exit !(d < 0.03 && d > -0.03) }'; then
			pass "$name: ${during#csampler: }"
		else
			fail "$name: own CPU ${own} s, and while the command ran: '${during}'"
		fi
	fi
	prefix_readable "$name" "$data" 100 complete "$pct"
}

load 999 3 30 50
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
# At the kernel's limit the sampling interrupts (each copying 32 KiB of stack) take most of the
# two CPUs: the target's work stretches 7x to 200x (perf alike; the more so on a loaded
# machine), and most samples, at times all, land in the kernel's interrupt and softirq code
# rather than the target's: nothing is asked of its code. --duration 4 bounds the time the
# machine is hammered; the rest of the target's work runs unprofiled and csampler waits for it.
load "$max" 0.5 60 0 --duration 4
finish
