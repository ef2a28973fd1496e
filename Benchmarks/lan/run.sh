#!/usr/bin/env bash
# Lattice on the simulated LAN (root): discovery and propagation p50/p99, 10,000
# records from one host to the others, and how the cost of one commit grows with
# the number of hosts, and an asset's transfer between two hosts. Release build;
# one JSON line per figure.
# Usage: Benchmarks/lan/run.sh [--runs N] [--hosts "2 5 10 20"] [--asset-mb N] [--only asset|fanout]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RUNS=40
FANOUT_HOSTS="2 5 10 20"
ASSET_MB=1024
ONLY=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --hosts) FANOUT_HOSTS="$2"; shift 2 ;;
    --asset-mb) ASSET_MB="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--hosts \"2 5 10 20\"] [--asset-mb N] [--only asset|fanout]" >&2; exit 2 ;;
  esac
done
"$ROOT/scripts/install-deps.sh"
(cd "$ROOT" && swift build -c release --product lattice >&2)
L="$ROOT/.build/release/lattice"
source "$ROOT/Tests/lan/lan.sh"
source "$ROOT/Tests/lan/nodes.sh"

# measure HOSTS JOB...: a fresh LAN of HOSTS hosts, one account, the jobs, torn down.
measure() {
  local hosts="$1"; shift
  lan_up "$hosts"
  PAIR_BY_ADDRESS=1 account_init $(seq "$hosts")
  LAN_TAG="$LAN_TAG" LAN_DIR="$LAN_DIR" LATTICE="$L" HOSTS="$hosts" python3 "$HERE/measure.py" "$@"
  lan_down
}

if [[ -z "$ONLY" ]]; then measure 3 "discovery=$RUNS" "cold=$((RUNS / 4))" "propagate=$((RUNS * 5))" "bulk=10000"; fi
if [[ "$ONLY" != asset ]]; then
  for hosts in $FANOUT_HOSTS; do measure "$hosts" "fanout=$RUNS"; done
fi
if [[ "$ONLY" != fanout ]]; then measure 2 "asset=$ASSET_MB"; fi
