#!/usr/bin/env bash
# Trusted sync under a flood of strangers, in one run, with release builds:
# propagation p50/p99 between two trusted `lattice serve` nodes (a, b) while
# lattice-flood (throwaway identities from 127.0.0.2, each sending 1 MiB
# messages after its handshake) aims at an unrelated node c ("quiet"), then,
# on a second set of stores of the same size, at a ("attacked"). In both, a
# first runs a 50,000-record write in one transaction, a trusted device d
# dials a, and a streams the records to b; propagation is sampled after that,
# under the flood, which makes at least 2,000 attempts. Prints JSON lines:
# each phase's propagation, a's CPU seconds and peak RSS, what the flood managed.
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
cpu() { awk '{print ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$1/stat"; }

serve() { # DIR [PEER-PORT]: starts a node (in this shell, so PIDS knows it); sets PID and PORT
  local dir="$1" peer="${2:-}"
  "$L" serve --port 0 --listen 127.0.0.1 --no-mdns --log-level error --store "$dir" ${peer:+--peer 127.0.0.1:$peer} > "$dir.log" 2>&1 &
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 100); do grep -q "listening on port" "$dir.log" && break; sleep 0.1; done
  PORT="$(sed -n 's/^listening on port //p' "$dir.log" | head -1)"
}

phase() { # LABEL TARGET (a or c)
  local label="$1" target="$2" dir="$TMP/$1" before after dialed
  mkdir -p "$dir"
  for s in a b c d; do
    "$L" init --store "$dir/$s" >/dev/null
    "$L" zone create Ping --store "$dir/$s" >/dev/null
    "$L" zone create Bulk --store "$dir/$s" >/dev/null
  done
  for pair in "a b" "a d"; do
    set -- $pair
    "$L" trust "$("$L" id --store "$dir/$2")" --store "$dir/$1" >/dev/null
    "$L" trust "$("$L" id --store "$dir/$1")" --store "$dir/$2" >/dev/null
  done
  python3 - "$label" > "$dir/bulk.jsonl" <<'PY'
import json, sys
tag = sys.argv[1]
for i in range(50000):
    print(json.dumps({"recordName": f"{tag}-{i}", "recordType": "Track",
                      "fields": {"title": {"value": f"track {i} of a long import", "type": "STRING"}, "n": {"value": i, "type": "INT64"}}}))
PY
  local a aport cport port
  serve "$dir/a"; a="$PID"; aport="$PORT"
  serve "$dir/b" "$aport"
  serve "$dir/c"; cport="$PORT"
  port="$([[ "$target" == a ]] && echo "$aport" || echo "$cport")"
  sleep 1
  before="$(cpu "$a")"
  "$FLOOD" --port "$port" --source 127.0.0.2 --handshakes 1000000 --lanes "$LANES" --messages 4 --seconds 600 > "$dir/flood.json" 2> "$dir/flood.progress" &
  local flood=$!
  "$L" record import Bulk "$dir/bulk.jsonl" --batch-size 50000 --store "$dir/a" >/dev/null &
  local write=$!
  sleep 0.3
  if "$L" sync --peer "127.0.0.1:$aport" --once --timeout 60 --store "$dir/d" >/dev/null 2>&1; then dialed=true; else dialed=false; fi
  wait "$write"
  until "$L" status --json --store "$dir/b" | python3 -c 'import json,sys; z=[z for z in json.load(sys.stdin)["zones"] if z["zoneID"]["zoneName"]=="Bulk"]; sys.exit(0 if z and z[0]["recordCount"] >= 50000 else 1)'; do sleep 0.2; done
  "$FIGURES" between --a "$dir/a" --b "$dir/b" --saves "$SAVES" --label "$label"
  # At least 2,000 strangers came, whatever the sampling took.
  while [[ "$(tail -n 1 "$dir/flood.progress" 2>/dev/null || echo 0)" -lt 2000 ]]; do sleep 0.2; done
  kill -TERM "$flood"; wait "$flood" || true
  after="$(cpu "$a")"
  echo "{\"figure\":\"flood phase\",\"label\":\"$label\",\"node_a_cpu_s\":$(python3 -c "print(round($after - $before, 2))"),\"node_a_peak_rss_mb\":$(awk '/VmHWM/ {print int($2/1024)}' "/proc/$a/status"),\"trusted_dial_in_ok\":$dialed,\"flood\":$(cat "$dir/flood.json")}"
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
phase quiet c
phase attacked a
