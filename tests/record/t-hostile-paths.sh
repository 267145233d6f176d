#!/usr/bin/env bash
# Hostile output paths (-o): a symbolic link planted at the path or at its .old is never
# followed; a directory, a FIFO or another user's file there gets one clear line and exit 125
# (and no hang); the .old rotation never loses the previous file, even when the new one cannot
# be written; no temporary file is left behind.
source "$CSAMPLER_ROOT/tests/lib.sh"
W=$TPROG/rec-worker

# refused NAME PATH PATTERN: record -o PATH exits 125 within 20 s with one stderr line matching
# PATTERN.
refused() {
	local name=$1 path=$2 pat=$3
	timeout 20 "$CSAMPLER" record -o "$path" -- true >out.txt 2>err.txt
	local rc=$?
	if [ "$rc" = 125 ] && [ "$(grep -c . err.txt)" = 1 ] && grep -q -- "$pat" err.txt; then
		pass "hostile path $name: refused with one line: $(cat err.txt)"
	else
		fail "hostile path $name: rc $rc (want 125), stderr: $(head -c 300 err.txt)"
	fi
}
# no_temp_left NAME: no csampler temporary file (PATH.XXXXXX) is left in the directory.
no_temp_left() {
	local left
	left=$(ls -A | grep -E '\.data\.[A-Za-z0-9]{6}$')
	[ -z "$left" ] && pass "hostile path $1: no temporary file left" || fail "hostile path $1: left behind: $left"
}

# --- a symbolic link at the output path, planted to another file: not followed, not replaced
echo "victim's content" >victim
ln -s victim link.data
refused "symlink" link.data "link.data is a symbolic link (not followed)"
[ "$(cat victim)" = "victim's content" ] && [ -L link.data ] && [ "$(readlink link.data)" = victim ] \
	&& pass "hostile path symlink: the link and its target are untouched" || fail "hostile path symlink: victim or link changed"
# ... also a dangling one (O_CREAT would create its target)
ln -s "$T/created-through-link" dangling.data
refused "dangling symlink" dangling.data "is a symbolic link"
[ ! -e created-through-link ] && pass "hostile path dangling symlink: nothing created through it" || fail "hostile path dangling symlink: its target was created"

# --- a symbolic link planted at PATH.old: the rotation replaces the link, never writes through it
echo "second victim" >victim2
"$CSAMPLER" record -q -o rot.data -- true 2>/dev/null
cp rot.data rot.prev
ln -s victim2 rot.data.old
"$CSAMPLER" record -q -o rot.data -- true >/dev/null 2>err.txt
rc=$?
if [ "$rc" = 0 ] && [ "$(cat victim2)" = "second victim" ] && [ ! -L rot.data.old ] && cmp -s rot.data.old rot.prev; then
	pass "hostile path symlink at .old: replaced by the previous file, its target untouched"
else
	fail "hostile path symlink at .old: rc $rc, victim2 '$(cat victim2)', .old $(stat -c %F rot.data.old) $(cat err.txt)"
fi

# --- a directory, a FIFO, a socket-like special file, another user's file
mkdir dir.data
refused "directory" dir.data "dir.data is a directory"
mkfifo fifo.data
refused "FIFO" fifo.data "fifo.data is a FIFO"
echo "someone else's" >other.data
chown 65534:65534 other.data
refused "another user's file" other.data "other.data belongs to user 65534: not replacing another user's file"
[ "$(cat other.data)" = "someone else's" ] && [ ! -e other.data.old ] && pass "hostile path another user's file: untouched, not rotated" \
	|| fail "hostile path another user's file: changed or rotated"

# --- .old rotation: the previous file becomes .old, the new one takes the name, both readable
"$CSAMPLER" record -q -o keep.data -- "$W" 1 0.3 >/dev/null 2>&1
cp keep.data keep.prev
"$CSAMPLER" record -q -o keep.data -- true >/dev/null 2>&1
if cmp -s keep.data.old keep.prev && ! cmp -s keep.data keep.prev && "$CSAMPLER" info -i keep.data >/dev/null 2>&1 &&
	[ "$(stat -c %a keep.data.old)" = 600 ]; then
	pass "hostile path rotation: the previous file is .old, unchanged (0600), the new one readable"
else
	fail "hostile path rotation: .old differs from the previous file or the new file is unreadable"
fi
no_temp_left "rotation"

# --- the new file cannot be written: the previous file keeps its name, and .old is not
# overwritten. A full tmpfs: the temporary file is created, its header cannot be written.
mkdir full
if mount -t tmpfs -o size=64k tmpfs full 2>mount.err; then
	echo previous >full/x.data
	echo older >full/x.data.old
	dd if=/dev/zero of=full/filler bs=4k count=64 status=none 2>/dev/null
	refused "full disk at creation" full/x.data "No space left on device"
	[ "$(cat full/x.data)" = previous ] && [ "$(cat full/x.data.old)" = older ] \
		&& pass "hostile path full disk at creation: the previous file and .old are intact" \
		|| fail "hostile path full disk at creation: x.data '$(cat full/x.data)', x.data.old '$(cat full/x.data.old)'"
	(cd full && no_temp_left "full disk at creation")
	umount full
else
	skip "hostile path full disk at creation: cannot mount a small tmpfs here ($(cat mount.err))"
fi
# .old is a directory: the rotation cannot happen, the previous file stays where it is
echo previous >y.data
mkdir y.data.old
refused "directory at .old" y.data "rename y.data to y.data.old"
[ "$(cat y.data)" = previous ] && pass "hostile path directory at .old: the previous file is intact" || fail "hostile path directory at .old: y.data changed"
no_temp_left "directory at .old"
# an unprivileged user in a directory it cannot write: the previous file stays
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	mkdir ro && echo previous >ro/z.data && chown -R 65534:65534 ro && chmod 555 ro
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CSAMPLER" record -o ro/z.data -- true >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 125 ] && grep -q 'cannot create ro/z.data: Permission denied; choose a writable path with -o' err.txt &&
		[ "$(cat ro/z.data)" = previous ] && [ ! -e ro/z.data.old ]; then
		pass "hostile path unwritable directory: one line, the previous file intact"
	else
		fail "hostile path unwritable directory: rc $rc, $(head -c 300 err.txt), z.data '$(cat ro/z.data)'"
	fi
else
	skip "hostile path unwritable directory: needs root and setpriv to switch to an unprivileged user"
fi
finish
