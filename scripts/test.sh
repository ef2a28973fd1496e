#!/usr/bin/env bash
# The whole test suite: unit, property, store-on-disk, crash and CLI tests,
# then a short seeded libFuzzer run of the change-set reader and applier.
#   LATTICE_FUZZ_SECONDS (default 45; 0 skips the libFuzzer run), LATTICE_FUZZ_CASES (convergence fuzzer histories)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
fuzz_seconds="${LATTICE_FUZZ_SECONDS:-45}"
if [ "$fuzz_seconds" -gt 0 ]; then
  scripts/fuzz.sh "$fuzz_seconds" 20261124 2>&1 | grep -E "^(Done|stat::|==[0-9]+==|SUMMARY|artifact_prefix|Test unit written)" || true
  test "${PIPESTATUS[0]}" -eq 0
fi
