#!/usr/bin/env bash
# Every name written into the SVG is escaped: C++ names with < > &, a hostile "<script>",
# "]]>", quotes, bad UTF-8 and control characters. The SVG stays well-formed XML, holds no
# script but its own two, and the names read back as text.
source "$CSAMPLER_ROOT/tests/lib.sh"
DATA=$CSAMPLER_ROOT/tests/flame/data

if ! "$CSAMPLER" flame --title '<script>alert("t")</script> & co' \
	--subtitle ']]> -- <!-- &amp;' --notes 'a < b & c' "$DATA/escape.folded" \
	>esc.svg 2>esc.err; then
	fail "escape: csampler flame failed: $(cat esc.err)"
	finish
fi
if command -v xmllint >/dev/null; then
	check "escape: SVG with hostile names is well-formed XML" xmllint --noout esc.svg
	t=$(xmllint --xpath 'string(//*[@id="title"])' esc.svg 2>/dev/null)
	[ "$t" = '<script>alert("t")</script> & co' ] && pass "escape: title is text" ||
		fail "escape: title reads back as '$t'"
	s=$(xmllint --xpath 'string(//*[@id="subtitle"])' esc.svg 2>/dev/null)
	[ "$s" = ']]> -- <!-- &amp;' ] && pass "escape: subtitle is text" ||
		fail "escape: subtitle reads back as '$s'"
	n=$(xmllint --xpath 'count(//*[local-name()="script"])' esc.svg 2>/dev/null)
	[ "$n" = 2 ] && pass "escape: only the two scripts of the SVG itself" ||
		fail "escape: $n script elements"
else
	skip "escape: XML checks: xmllint not installed (libxml2-utils)"
fi
n=$(grep -c '<script' esc.svg)
[ "$n" = 2 ] && pass "escape: no '<script' from the names in the file" ||
	fail "escape: '<script' appears $n times"
grep -q 'alert(1)' esc.svg && ! grep -q '<script>alert(1)' esc.svg &&
	pass "escape: the hostile name is in the data, escaped" ||
	fail "escape: the hostile name is missing or unescaped"
check "escape: names read back from the data as written (bad UTF-8 as U+FFFD)" node -e "
const s = require('fs').readFileSync('esc.svg', 'utf8');
const d = JSON.parse(s.split('id=\"flamedata\">')[1].split('</script>')[0]);
const want = ['<script>alert(1)</script>', 'a&b', '\"quoted\" it\\'s', 'ends]]>here',
  '</script><script>x()', 'std::map<int, std::vector<char>>::find(int const&)', 'dash--dash',
  'bad\ufffd\ufffdutf8', 'ctrl\ufffdchar', 'caf\u00e9', 'overlong\ufffd\ufffd'];
for (const w of want) if (!d.names.includes(w)) throw 'missing ' + JSON.stringify(w) + ' in ' + JSON.stringify(d.names);"
finish
