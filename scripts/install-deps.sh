#!/usr/bin/env bash
# install-deps.sh: install the Debian packages csampler's build and tests need, when missing.
# As root it runs apt-get; otherwise it prints the exact command to run. Called by `make`.
# --test adds what only the tests need (chromium for the browser test, xmllint, setpriv from
# util-linux, bc, xz for the MiniDebugInfo test, protoc and golang-go (go tool pprof) for the pprof
# export tests, debuginfod for the debuginfod test's server, tmux for the live views (record's status
# line, top), PyTorch for the Python frames test on
# a training loop, clang's sanitizer and libFuzzer runtimes for the sanitizer replay). --fuzz adds what only `make fuzz` needs
# (clang with libFuzzer and the sanitizer runtimes, llvm-profdata and llvm-cov).
set -u
pkgs="gcc make libelf-dev libdw-dev libunwind-dev zlib1g-dev libzstd-dev libseccomp-dev elfutils binutils g++ libxxhash-dev clang libbpf-dev bpftool"
if [ "${1:-}" = "--test" ]; then
  pkgs="$pkgs libxml2-utils util-linux chromium bc xz-utils protobuf-compiler golang-go debuginfod python3-torch tmux libclang-rt-dev"
elif [ "${1:-}" = "--fuzz" ]; then
  pkgs="$pkgs clang llvm libclang-rt-dev"
fi
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "csampler: missing packages:$missing" >&2
  echo "csampler: run: sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq $missing >/tmp/csampler-apt.log 2>&1; then
  apt-get update -qq >/dev/null 2>&1 || true
  if ! apt-get install -y -qq $missing >/tmp/csampler-apt.log 2>&1; then
    echo "install-deps: apt-get install failed (see /tmp/csampler-apt.log):$missing" >&2
    # The browser test's packages are optional: their test says SKIPPED when absent.
    [ "${1:-}" = "--test" ] && exit 0
    exit 1
  fi
fi
exit 0
