#!/usr/bin/env bash
# --help and the manual list the same options: for csampler and each command, every long option
# of an option row of `--help` (written from the command's option table, cmd/opts.c) is a tag
# of the OPTIONS or FILTERS section of the man page that --help names, and every long option of
# those tags is in --help. Also: --help exits 0 and names man/csampler[-CMD].1, and a bad
# option gives one line naming 'csampler CMD --help' and exit status 125.
source "$CSAMPLER_ROOT/tests/lib.sh"

# help_options OUT: the long options of --help's option rows ("  -o, --output FILE ...",
# "      --sort KEY ..."), one a line, sorted.
help_options() { sed -nE 's/^  (-[[:alnum:]], |    )--([[:alnum:]][[:alnum:]-]*).*/--\2/p' "$1" | sort -u; }
# man_options PAGE: the long options of the .TP tags of its OPTIONS and FILTERS sections.
man_options() {
	awk '/^\.SH/ { s = $2 } (s == "OPTIONS" || s == "FILTERS") && prev == ".TP" { print } { prev = $0 }' "$1" |
		sed 's/\\-/-/g' | grep -oE -- '--[[:alnum:]][[:alnum:]-]*' | sort -u
}

for cmd in "" record info report folded flame diff merge export top dump env; do
	name=${cmd:-csampler}
	"$CSAMPLER" $cmd --help >help.txt 2>help.err
	rc=$?
	page=$(sed -nE 's/^The manual: man (csampler(-[a-z]+)?)$/\1/p' help.txt)
	want=csampler${cmd:+-$cmd}
	if [ "$rc" != 0 ] || [ -s help.err ] || [ "$page" != "$want" ]; then
		fail "help-man/$name: --help: rc $rc, manual '$page' (want $want): $(head -c 200 help.err)"
		continue
	fi
	man=$CSAMPLER_ROOT/man/$page.1
	help_options help.txt >help.opts
	man_options "$man" >man.opts
	if [ "$(wc -l <help.opts)" -lt 2 ]; then
		fail "help-man/$name: --help lists $(wc -l <help.opts) long options"
		continue
	fi
	only_help=$(comm -23 help.opts man.opts | tr '\n' ' ')
	only_man=$(comm -13 help.opts man.opts | tr '\n' ' ')
	if [ -z "$only_help$only_man" ]; then
		pass "help-man/$name: --help and $page.1 list the same $(wc -l <help.opts) options"
	else
		fail "help-man/$name: only in --help: ${only_help:-none}; only in $page.1: ${only_man:-none}"
	fi
	"$CSAMPLER" $cmd --no-such-option >out.txt 2>err.txt
	rc=$?
	if [ "$rc" = 125 ] && [ "$(grep -c . err.txt)" = 1 ] &&
		grep -qF "unknown option '--no-such-option'; see 'csampler${cmd:+ $cmd} --help'" err.txt; then
		pass "help-man/$name: an unknown option gives one line and 125"
	else
		fail "help-man/$name: unknown option: rc $rc, stderr: $(head -c 300 err.txt)"
	fi
done
finish
