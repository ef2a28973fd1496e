#!/usr/bin/env bash
# The whole test suite: unit, property, store-on-disk, crash and CLI tests;
# then, as root, the scenarios on a simulated LAN (real mDNS, several hosts);
# then a short seeded libFuzzer run of the change-set reader and applier.
#   LATTICE_FUZZ_SECONDS (default 45; 0 skips the libFuzzer run), LATTICE_FUZZ_CASES (convergence fuzzer histories)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Links resolve inside the repository; the README's quick start is the code the build compiles.
python3 scripts/check-docs.py
# Engine modules share API with `package` access; what they leave public is documented.
python3 scripts/check-api.py
# Every target imports only what it declares (the check is SwiftPM's), and Lattice's own
# targets build with no warning (Package.swift makes them errors under this variable).
export LATTICE_WARNINGS_AS_ERRORS=1
swift build --build-tests --explicit-target-dependency-import-check=error
# The public API's DocC (Sources/Lattice/Lattice.docc), with no warning: a broken symbol link fails.
swift package --allow-writing-to-directory .build/docs generate-documentation --target Lattice --warnings-as-errors --output-path .build/docs > /dev/null
echo "documentation: the Lattice module's DocC builds with no warning (.build/docs)"
if [ "$#" -gt 0 ]; then
  swift test --skip-build "$@"
else
  # Two suites run in processes of their own, after the rest. The convergence fuzzer
  # keeps a core busy for minutes: beside it, the nodes of the network tests
  # waited minutes for a thread. The flood test loads both cores on purpose and
  # times propagation under it, so neither disturbs the other's timing.
  swift test --skip-build --skip FloodTests --skip ConvergenceFuzzTests
  swift test --skip-build --filter ConvergenceFuzzTests
  swift test --skip-build --filter FloodTests
fi
# The example anyone can run: two model containers sync on loopback; it exits 1 if they differ.
echo "movies-example: $(.build/debug/movies-example 2>/dev/null | tail -n 1)"
if [ "$(id -u)" -eq 0 ]; then
  Tests/lan/scenarios.sh .build/debug/lattice
  Tests/lan/relay.sh .build/debug/lattice
else
  echo "the simulated-LAN scenarios need root (network namespaces): skipped"
fi
# The node on the web: /metrics through Prometheus' parser, the OpenAPI document
# through schemathesis, the console in headless Chromium (screenshots in .build/artifacts/console).
Tests/web/run.sh .build/debug/lattice .build/artifacts
fuzz_seconds="${LATTICE_FUZZ_SECONDS:-45}"
if [ "$fuzz_seconds" -gt 0 ]; then
  log="$(mktemp)"
  status=0
  scripts/fuzz.sh "$fuzz_seconds" 20261124 > "$log" 2>&1 || status=$?
  grep -E "^(Done|stat::|==[0-9]+==|SUMMARY|artifact_prefix|Test unit written|.*Fatal error)" "$log" || true
  if [ "$status" -ne 0 ]; then tail -n 60 "$log"; fi
  rm -f "$log"
  echo "libFuzzer run of the change-set target: $([ "$status" -eq 0 ] && echo "no crash" || echo "FAILED (exit $status)")"
  exit "$status"
fi
