#!/usr/bin/env bash
# t-parallel-deps.sh: `make -jN` on a fresh machine must finish installing dependencies before
# it compiles anything (headers such as xxhash.h come from those packages). A copy of the tree
# is built with a dependency step that takes two seconds and leaves a mark when done, and a
# compiler that notes whether the mark existed when it was called.
source "$CSAMPLER_ROOT/tests/lib.sh"
mkdir tree
(cd "$CSAMPLER_ROOT" && git ls-files -z | xargs -0 cp --parents -t "$T/tree")
cat > slow-deps.sh <<EOS
#!/bin/sh
sleep 2
touch "$T/deps-done"
EOS
cat > cc-probe.sh <<EOS
#!/bin/sh
if [ -e "$T/deps-done" ]; then echo after >> "$T/cc.log"; else echo before >> "$T/cc.log"; fi
exit 1
EOS
chmod +x slow-deps.sh cc-probe.sh
for target in all demo; do
	rm -f deps-done cc.log
	(cd tree && make -k -j8 "$target" DEPS_SCRIPT="$T/slow-deps.sh" CC="$T/cc-probe.sh" NVCC= >"$T/make-$target.log" 2>&1)
	if [ ! -s cc.log ]; then
		fail "build/deps-before-compile-$target: the compiler was never called ($(tail -n 2 "make-$target.log" | tr '\n' ' '))"
	elif grep -q before cc.log; then
		fail "build/deps-before-compile-$target: $(grep -c before cc.log) compiler calls started before the dependencies were installed"
	else
		pass "build/deps-before-compile-$target: $(wc -l < cc.log) compiler calls, all after the dependency step"
	fi
done
finish
