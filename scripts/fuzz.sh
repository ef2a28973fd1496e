#!/usr/bin/env bash
# Coverage-guided fuzzing of the change-set reader and applier with libFuzzer.
#   scripts/fuzz.sh [SECONDS] [SEED]     (default: 60 s, seed 1)
# Crashers land in Tests/Fuzz/changeset-crashers/, where the test suite replays them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
seed="${2:-1}"
scripts/install-deps.sh
swift build -c release --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DLIBFUZZER -Xswiftc -use-ld=lld --product lattice-fuzz-changeset
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# libFuzzer adds what it finds to the first corpus directory: a scratch copy, not the repository's seeds.
cp Tests/Fuzz/changeset-corpus/* "$work/"
.build-fuzz/release/lattice-fuzz-changeset -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix=Tests/Fuzz/changeset-crashers/ -print_final_stats=1 "$work" Tests/Fuzz/changeset-crashers
