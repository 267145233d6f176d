# not-read.awk: what the awk scripts that read `csampler folded` of the Python tests
# (deep-split.awk, reuse-split.awk) share: whether a folded line shows Python frames not read.
# Give it the folded file twice (awk -f not-read.awk -f X.awk FILE FILE): the first pass
# learns the native frame that Python frames are put after in a build whose interpreter loop
# has no name (3.14: MODULE+0xOFFSET, the loop's caller), the second is the script's.
# A Python frame: "name (file:line)", or the marker "[Python frames not read] (?:0)".
function is_python_frame(f) { return f ~ /\(.*:[0-9]+\)$/ }

NR == FNR {
	m = split($0, fr, ";")
	sub(/ [0-9]+$/, "", fr[m])
	for (i = 2; i <= m; i++)
		if (is_python_frame(fr[i]) && !is_python_frame(fr[i - 1])) {
			runs_seen += $NF
			if (fr[i - 1] ~ /\+0x[0-9a-f]+$/)
				before_python[fr[i - 1]] += $NF
		}
	next
}

# the most common unnamed frame before Python frames, when it is before most runs of them
# (none in a build whose loop is named: _PyEval_EvalFrameDefault's place is taken)
function unnamed_eval(    f, best) {
	if (unnamed_picked)
		return unnamed
	unnamed_picked = 1
	for (f in before_python)
		if (before_python[f] > best) {
			best = before_python[f]
			unnamed = f
		}
	if (best * 2 < runs_seen)
		unnamed = ""
	return unnamed
}

# an interpreter activation of an unnamed loop left native: that frame, then no Python frame
function left_native(line,    m, fr, i, u) {
	u = unnamed_eval()
	if (u == "" || index(line, u) == 0)
		return 0
	m = split(line, fr, ";")
	for (i = 1; i <= m; i++)
		if (fr[i] == u && (i == m || !is_python_frame(fr[i + 1])))
			return 1
	return 0
}

# Python frames of an interpreter activation not read: its frame left, named
# (_PyEval_EvalFrameDefault, 3.11-3.13) or not (left_native), or the marker frame in their place.
function frames_not_read(line) {
	return line ~ /_PyEval_EvalFrameDefault|\[Python frames not read\]/ || left_native(line)
}

# not_read_native(line), for a line with none of the program's functions: no Python frame read
# at all (frames_not_read, or, 3.14, the module's code run with no Python frame under
# PyEval_EvalCode); the interpreter's start-up, imports and shutdown excepted (no Python frame
# is expected there).
function not_read_native(line) {
	return (frames_not_read(line) ||
		(line ~ /;PyEval_EvalCode;/ && line !~ /_PyEval_EvalFrameDefault|\.py:[0-9]/)) &&
	       line !~ /Py_InitializeFromConfig|pymain_init|import_find_and_load|Py_FinalizeEx|PyImport_/
}
