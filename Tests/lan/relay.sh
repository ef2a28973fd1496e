#!/usr/bin/env bash
# Relay cost on the simulated LAN (root only): HOSTS hosts (default 10) of one
# account, each connected to every other by mDNS alone. A record saved on h1
# reaches every other host over its link with h1 alone: by `lattice peers
# --json`'s message counts per peer, no host exchanges a message with any
# host but h1, for each of 5 saves (without relaying, each host that applies
# a commit re-opens its streams to all its other peers).
# Usage: Tests/lan/relay.sh [path/to/lattice]   (RELAY_HOSTS=N for another size)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
L="$(realpath "${1:-$HERE/../../.build/debug/lattice}")"
HOSTS="${RELAY_HOSTS:-10}"
source "$HERE/lan.sh"
source "$HERE/nodes.sh"

fail() {
  echo "FAILED: $*" >&2
  for k in $(seq "$LAN_HOSTS"); do
    echo "--- h$k serve errors (last 5 lines)" >&2
    tail -n 5 "$LAN_DIR/h$k/serve.err" >&2 2>/dev/null || true
  done
  exit 1
}

# messages K: "DEVICE-ID COUNT" per connected peer of host K (sent + received).
messages() {
  lat "$1" peers --json | python3 -c '
import json, sys
for peer in json.load(sys.stdin)["peers"]:
    if peer["connected"]:
        print(peer["deviceID"], (peer.get("messagesSent") or 0) + (peer.get("messagesReceived") or 0))'
}

snapshot() { local k; for k in $(seq 2 "$HOSTS"); do messages "$k" | sed "s/^/h$k /"; done | sort; }

# Until no host's counts changed for 3 s (the status is rewritten within a second of a change).
settle() {
  local last now still=0
  last="$(snapshot)"
  for _ in $(seq 60); do
    sleep 1
    now="$(snapshot)"
    if [ "$now" = "$last" ]; then still=$((still + 1)); [ "$still" -ge 3 ] && return 0; else still=0; last="$now"; fi
  done
  fail "the mesh never went quiet"
}

lan_up "$HOSTS"
PAIR_BY_ADDRESS=1 account_init $(seq "$HOSTS")
# Digest comparisons after syncs run on a schedule of their own (scenario (j)):
# off here, so what each link carries is the relay's alone.
for k in $(seq "$HOSTS"); do serve "$k" --verify-every 0; done
for k in $(seq "$HOSTS"); do wait_until 30 "h$k lists every other host connected" all_connected "$k" $(seq "$HOSTS"); done
lat 1 zone create Relay >/dev/null
wait_until 15 "the zone reaches every host" zone_on Relay $(seq 2 "$HOSTS")
H1="$(device_id 1)"
settle
for round in 1 2 3 4 5; do
  before="$(snapshot)"
  lat 1 record save "Relay/r$round" --type Note "text=round $round" >/dev/null
  for k in $(seq 2 "$HOSTS"); do wait_until 15 "r$round reaches h$k" has_record "$k" "Relay/r$round"; done
  settle
  after="$(snapshot)"
  busy="$(diff <(echo "$before") <(echo "$after") | grep '^>' | grep -v " $H1 " || true)"
  links="$(echo "$busy" | grep -c . || true)"
  echo "round $round: $(diff <(echo "$before") <(echo "$after") | grep -c '^>' || true) link ends carried messages, $links of them between hosts other than h1"
  [ "$links" = 0 ] || { echo "$busy" >&2; fail "round $round: hosts other than h1 exchanged messages with each other"; }
done
echo "relay: a commit on h1 of $HOSTS hosts crossed only h1's links, 5 times out of 5"
