# lib-python.sh: the preamble the Python tests (tests/python/t-python*.sh) share: lib.sh, the
# folder of their programs ($SRC), and how they find an interpreter of a given version.
source "$CSAMPLER_ROOT/tests/lib.sh"
SRC="$CSAMPLER_ROOT/tests/python"

# find_python 3.12: the real interpreter binary of that version (Debian's first, then
# /usr/local's, then pyenv's, then scripts/get-python3.14.sh's), or nothing
find_python() {
	local v=$1 c real
	for c in "$(command -v "python$v" 2>/dev/null)" /usr/bin/python$v /usr/local/bin/python$v \
		"$HOME"/.pyenv/versions/$v.*/bin/python$v /opt/csampler-python$v/usr/bin/python$v; do
		[ -n "$c" ] && [ -x "$c" ] || continue
		real=$("$c" -c "import sys; assert '%d.%d' % sys.version_info[:2] == '$v'; print(sys.executable)" 2>/dev/null) || continue
		[ -x "$real" ] && { echo "$real"; return; }
	done
}

# find_pyenv 3.11: pyenv's build of that version (as the issue measured it beside Debian's), or
# nothing
find_pyenv() {
	local c
	for c in "$HOME"/.pyenv/versions/$1.*/bin/python$1; do
		[ -x "$c" ] && { echo "$c"; return; }
	done
}

# need_python311 NAME: PY = Debian's CPython 3.11 (python3.11, or python3 when it is 3.11), or a
# SKIPPED line named NAME and the end of the test
need_python311() {
	PY=$(command -v python3.11 || command -v python3)
	if [ -z "$PY" ] || ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
		skip "$1: needs CPython 3.11 (python3.11)"
		exit 0
	fi
}
