#!/usr/bin/env bash
# Peak resident memory of both nodes while an empty node syncs N records
# (default 1,000,000 of the merge workload's shape) from another, through the
# release `lattice` binary: two `lattice serve` processes on loopback.
# Usage: Benchmarks/sync/rss.sh [--records N]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../release-lattice.sh"
TMP="$(mktemp -d)"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"' EXIT
"$L" init --store "$TMP/a" >/dev/null
"$L" init --store "$TMP/b" >/dev/null
"$L" trust "$("$L" id --store "$TMP/b")" --store "$TMP/a" >/dev/null
"$L" trust "$("$L" id --store "$TMP/a")" --store "$TMP/b" >/dev/null
"$L" zone create Tracks --store "$TMP/a" >/dev/null
echo "== importing $RECORDS records into A" >&2
python3 "$HERE/../workload_lines.py" "$RECORDS" | "$L" record import Tracks - --batch-size 5000 --store "$TMP/a" >/dev/null
"$L" serve --port 0 --listen 127.0.0.1 --no-mdns --store "$TMP/a" > "$TMP/a.log" 2>&1 &
PIDS+=($!); A=$!
for _ in $(seq 100); do grep -q "listening on port" "$TMP/a.log" && break; sleep 0.1; done
PORT="$(sed -n 's/^listening on port //p' "$TMP/a.log" | head -1)"
START=$(date +%s.%N)
"$L" serve --port 0 --listen 127.0.0.1 --no-mdns --peer "127.0.0.1:$PORT" --store "$TMP/b" > "$TMP/b.log" 2>&1 &
PIDS+=($!); B=$!
peak() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$1/status"; }
while :; do
  COUNT="$("$L" status --json --store "$TMP/b" | python3 -c 'import json,sys; z=[z for z in json.load(sys.stdin)["zones"] if z["zoneID"]["zoneName"]=="Tracks"]; print(z[0]["recordCount"] if z else 0)')"
  [[ "$COUNT" -ge "$RECORDS" ]] && break
  sleep 0.5
done
END=$(date +%s.%N)
echo "{\"figure\":\"peak RSS during initial sync\",\"records\":$RECORDS,\"seconds\":$(python3 -c "print(round($END - $START, 1))"),\"sender_peak_mb\":$(peak $A),\"receiver_peak_mb\":$(peak $B)}"
