# reuse-split.awk: reads `csampler folded` of tests/python/reuse.py and prints "c lost": the
# samples under run_c (the copy whose code object took a freed one's address) with Python
# frames read, and the samples of the run whose Python frames were not read (under run_c, or
# native only: not_read_native, from not-read.awk). run_a's samples (before the swap) are
# not counted.
{
	n = $NF; line = $0; sub(/ [0-9]+$/, "", line)
	if (line ~ /run_c \(/) {
		if (frames_not_read(line)) lost += n; else c += n
		next
	}
	if (line ~ /run_a \(/) next
	if (not_read_native(line)) lost += n
}
END { printf "%d %d\n", c, lost }
