#!/usr/bin/env bash
# The whole test suite under ThreadSanitizer, then (as root) the simulated-LAN
# scenarios with the sanitized `lattice`: every data race in the test process
# or in any `lattice` process it starts is reported, and the run fails.
#   LATTICE_FUZZ_CASES  convergence-fuzzer histories (default 100 here: TSan is slow)
#   extra arguments go to `swift test` (for example --filter Sync)
# Builds in .build-tsan, apart from the normal build; the suite takes about 45 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scratch=.build-tsan
swift build --build-tests --sanitize=thread --scratch-path "$scratch"

# One report file per process that found a race, child processes included
# (they inherit the environment), so a race in a CLI child cannot hide in its stderr.
reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
export TSAN_OPTIONS="log_path=$reports/race second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export LATTICE_FUZZ_CASES="${LATTICE_FUZZ_CASES:-100}"
# Tests that cannot run sanitized skip themselves on this (libfaketime deadlocks with TSan's runtime).
export LATTICE_SANITIZER=thread

status=0
swift test --skip-build --sanitize=thread --scratch-path "$scratch" "$@" || status=$?
if [ "$(id -u)" -eq 0 ]; then
  Tests/lan/scenarios.sh "$scratch/debug/lattice" || status=$?
else
  echo "the simulated-LAN scenarios need root (network namespaces): skipped"
fi

found=$(find "$reports" -type f | wc -l)
if [ "$found" -gt 0 ]; then
  for report in "$reports"/*; do echo "== $report"; cat "$report"; done
  status=1
fi
echo "ThreadSanitizer: $found process(es) reported a race"
exit "$status"
