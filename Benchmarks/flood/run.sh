#!/usr/bin/env bash
# Trusted sync under a flood of strangers, in one run, with release builds:
# propagation p50/p99 between two trusted `lattice serve` nodes (a, b) while
# lattice-flood (throwaway identities from 127.0.0.2, each sending 1 MiB
# messages after its handshake) aims at an unrelated node c ("quiet"), then
# at a ("attacked"); in both, a first runs a 50,000-record write in one
# transaction, a trusted device d dials a, and a streams the records to b
# (propagation is sampled after that, under the flood). Prints JSON lines: each
# phase's propagation, a's CPU seconds, what the flood managed, and a's peak RSS.
# Usage: Benchmarks/flood/run.sh [--saves 200] [--lanes 64]
#   LATTICE=PATH runs the nodes with another build of lattice (an older commit's, to compare).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SAVES=200
LANES=64
while [[ $# -gt 0 ]]; do
  case "$1" in
    --saves) SAVES="$2"; shift 2 ;;
    --lanes) LANES="$2"; shift 2 ;;
    *) echo "usage: $0 [--saves N] [--lanes N]" >&2; exit 2 ;;
  esac
done
[[ -n "${LATTICE:-}" ]] || (cd "$ROOT" && swift build -c release --product lattice >&2)
(cd "$ROOT" && swift build -c release --product lattice-flood >&2)
(cd "$ROOT/Benchmarks" && swift build -c release --product lattice-sync-figures >&2)
L="${LATTICE:-$ROOT/.build/release/lattice}"
FLOOD="$ROOT/.build/release/lattice-flood"
FIGURES="$ROOT/Benchmarks/.build/release/lattice-sync-figures"
TMP="$(mktemp -d)"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"' EXIT

for s in a b c d; do
  "$L" init --store "$TMP/$s" >/dev/null
  "$L" zone create Ping --store "$TMP/$s" >/dev/null
  "$L" zone create Bulk --store "$TMP/$s" >/dev/null
done
for pair in "a b" "a d"; do
  set -- $pair
  "$L" trust "$("$L" id --store "$TMP/$2")" --store "$TMP/$1" >/dev/null
  "$L" trust "$("$L" id --store "$TMP/$1")" --store "$TMP/$2" >/dev/null
done
serve() { # STORE [PEER-PORT] -> prints the port it listens on
  local store="$1" peer="${2:-}"
  "$L" serve --port 0 --listen 127.0.0.1 --no-mdns --log-level error --store "$TMP/$store" ${peer:+--peer 127.0.0.1:$peer} > "$TMP/$store.log" 2>&1 &
  PIDS+=($!)
  echo "$!" > "$TMP/$store.pid"
  for _ in $(seq 100); do grep -q "listening on port" "$TMP/$store.log" && break; sleep 0.1; done
  sed -n 's/^listening on port //p' "$TMP/$store.log" | head -1
}
APORT="$(serve a)"; A="$(cat "$TMP/a.pid")"
serve b "$APORT" >/dev/null
CPORT="$(serve c)"
cpu() { awk '{print ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }
for label in quiet attacked; do
  python3 - "$label" > "$TMP/bulk-$label.jsonl" <<'PY'
import json, sys
tag = sys.argv[1]
for i in range(50000):
    print(json.dumps({"recordName": f"{tag}-{i}", "recordType": "Track",
                      "fields": {"title": {"value": f"track {i} of a long import", "type": "STRING"}, "n": {"value": i, "type": "INT64"}}}))
PY
done
sleep 1

bulk_on_b() {
  "$L" status --json --store "$TMP/b" | python3 -c 'import json,sys; z=[z for z in json.load(sys.stdin)["zones"] if z["zoneID"]["zoneName"]=="Bulk"]; print(z[0]["recordCount"] if z else 0)'
}
phase() { # LABEL TARGET-PORT BULK-RECORDS-EXPECTED-ON-B
  local label="$1" port="$2" expected="$3" before after dialed
  before="$(cpu "$A")"
  "$FLOOD" --port "$port" --source 127.0.0.2 --handshakes 1000000 --lanes "$LANES" --messages 4 --seconds 600 > "$TMP/flood-$label.json" 2> "$TMP/flood-$label.progress" &
  local flood=$!
  "$L" record import Bulk "$TMP/bulk-$label.jsonl" --batch-size 50000 --store "$TMP/a" >/dev/null &
  local write=$!
  sleep 0.3
  if "$L" sync --peer "127.0.0.1:$APORT" --once --timeout 60 --store "$TMP/d" >/dev/null 2>&1; then dialed=true; else dialed=false; fi
  wait "$write"
  while [[ "$(bulk_on_b)" -lt "$expected" ]]; do sleep 0.2; done
  "$FIGURES" between --a "$TMP/a" --b "$TMP/b" --saves "$SAVES" --label "$label"
  # At least 2,000 strangers came, whatever the sampling took.
  while [[ "$(tail -n 1 "$TMP/flood-$label.progress" 2>/dev/null || echo 0)" -lt 2000 ]]; do sleep 0.2; done
  kill -TERM "$flood"; wait "$flood" || true
  after="$(cpu "$A")"
  echo "{\"figure\":\"flood phase\",\"label\":\"$label\",\"attacked_node_cpu_s\":$(python3 -c "print(round($after - $before, 2))"),\"trusted_dial_in_ok\":$dialed,\"flood\":$(cat "$TMP/flood-$label.json")}"
}
phase quiet "$CPORT" 50000
phase attacked "$APORT" 100000
echo "{\"figure\":\"attacked node peak RSS\",\"peak_mb\":$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$A/status")}"
