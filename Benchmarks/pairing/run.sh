#!/usr/bin/env bash
# Pairing, end to end: the time from `lattice pair CODE` on a new device to
# that device holding the account's records (the pair command, then one
# `lattice sync --once` with a node of the account), on loopback and, as
# root, on the simulated LAN (the joiner finds the offer by mDNS there).
# Release build; one line per setting: median and max of --runs runs.
# Usage: Benchmarks/pairing/run.sh [--runs 10] [--records 1000]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
RUNS=10
RECORDS=1000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --records) RECORDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--records N]" >&2; exit 2 ;;
  esac
done
"$ROOT/scripts/install-deps.sh" >&2
(cd "$ROOT" && swift build -c release --product lattice >&2)
L="$ROOT/.build/release/lattice"
source "$ROOT/Tests/lan/lan.sh"
source "$ROOT/Tests/lan/nodes.sh"
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -z "$LAN_DIR" ] || lan_down
  rm -rf "$WORK"
}
trap cleanup EXIT
records() { python3 -c "
import json
for i in range($RECORDS): print(json.dumps({'recordName': 'm%d' % i, 'recordType': 'Movie', 'fields': {'title': {'value': 'Movie %d' % i}}}))"; }
summary() { sort -n | awk -v what="$1" '{ v[NR] = $1 } END { printf "%s: median %.3f s, max %.3f s (%d runs)\n", what, v[int((NR + 1) / 2)], v[NR], NR }'; }
held() { "$L" query Movie --zone Movies --limit 100000 --json "$@" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["records"]))'; }

# Loopback: the account's device serves and offers; the new one pairs by address, then syncs.
for run in $(seq "$RUNS"); do
  a="$WORK/a$run" b="$WORK/b$run"
  "$L" init --store "$a" >/dev/null; "$L" init --store "$b" >/dev/null
  "$L" zone create Movies --store "$a" >/dev/null
  records | "$L" record import Movies --store "$a" >/dev/null
  "$L" serve --port 0 --listen 127.0.0.1 --no-mdns --store "$a" > "$WORK/serve$run" 2>&1 & PIDS+=($!)
  "$L" pair --port 0 --listen 127.0.0.1 --no-mdns --store "$a" > "$WORK/code$run" 2> "$WORK/offer$run" & PIDS+=($!)
  for _ in $(seq 200); do grep -q 'listening on port' "$WORK/serve$run" && grep -q 'on the other device' "$WORK/offer$run" && break; sleep 0.05; done
  node="$(sed -n 's/^listening on port //p' "$WORK/serve$run" | head -1)"
  offer="$(sed -n 's/.*THIS-HOST:\([0-9]*\).*/\1/p' "$WORK/offer$run")"
  start=$(now)
  "$L" pair "$(head -n 1 "$WORK/code$run")" --peer "127.0.0.1:$offer" --store "$b" >/dev/null
  paired=$(since "$start")
  "$L" sync --peer "127.0.0.1:$node" --once --store "$b" >/dev/null
  total=$(since "$start")
  [ "$(held --store "$b")" = "$RECORDS" ] || { echo "run $run: the new device does not hold the $RECORDS records" >&2; exit 1; }
  echo "$paired" >> "$WORK/loopback-pair"; echo "$total" >> "$WORK/loopback-total"
  kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; PIDS=()
done
summary "loopback: lattice pair CODE --peer" < "$WORK/loopback-pair"
summary "loopback: pair, then holding $RECORDS records" < "$WORK/loopback-total"

lan_require 2>/dev/null || { echo "simulated LAN: skipped (needs root and avahi-daemon)"; exit 0; }
for run in $(seq "$RUNS"); do
  lan_up 2
  lat 1 init >/dev/null; lat 2 init >/dev/null
  lat 1 zone create Movies >/dev/null
  records | lat 1 record import Movies >/dev/null
  serve 1 --port 7700
  on_exec 1 "$L" pair --port 47300 --store "$LAN_DIR/h1/store" > "$LAN_DIR/code" 2> "$LAN_DIR/offer" &
  wait_until 10 "h1 offers a code" grep -q 'on the other device' "$LAN_DIR/offer"
  start=$(now)
  lat 2 pair "$(head -n 1 "$LAN_DIR/code")" >/dev/null
  paired=$(since "$start")
  lat 2 sync --peer 10.77.0.1:7700 --once >/dev/null
  total=$(since "$start")
  [ "$(on 2 "$L" query Movie --zone Movies --limit 100000 --json --store "$LAN_DIR/h2/store" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["records"]))')" = "$RECORDS" ] \
    || { echo "LAN run $run: the new device does not hold the records" >&2; exit 1; }
  echo "$paired" >> "$WORK/lan-pair"; echo "$total" >> "$WORK/lan-total"
  stop_serve 1
  lan_down; LAN_DIR=""
  trap cleanup EXIT
done
summary "simulated LAN: lattice pair CODE (found by mDNS)" < "$WORK/lan-pair"
summary "simulated LAN: pair, then holding $RECORDS records" < "$WORK/lan-total"
