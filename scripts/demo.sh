#!/usr/bin/env bash
# The main job: three devices on a simulated LAN (network namespaces on a
# bridge with no route out, each with its own dbus, avahi-daemon and store)
# run `lattice serve` with no addresses given: they find each other by mDNS,
# sync over encrypted TCP, edit at once, one goes offline (its cable pulled)
# and edits on its own, and all converge, conflicts included. The records of
# each host are shown at the end. Everything is torn down when it ends.
# Without root (namespaces), it runs scripts/demo-loopback.sh instead and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
source Tests/lan/lan.sh
if ! lan_require 2>/dev/null; then
  echo "This machine cannot create a simulated LAN here (it needs root for network namespaces, and avahi-daemon):"
  echo "running the loopback demo instead: two nodes on 127.0.0.1 with static --peer addresses, no mDNS."
  exec scripts/demo-loopback.sh
fi
swift build --product lattice >/dev/null
L="$PWD/.build/debug/lattice"
source Tests/lan/nodes.sh
names=([1]=laptop [2]=phone [3]=tablet)
fail() { echo "demo failed: $*" >&2; exit 1; }
say() { printf '\n%s\n' "$*"; }
# Echo a command as typed on host K, then run it there.
run() { local k="$1"; shift; printf '\n%s$ lattice %s\n' "${names[$k]}" "$(printf '%q ' "$@")"; lat "$k" "$@"; }

say "# A simulated LAN: three hosts (10.77.0.1-3), each with its own avahi-daemon, no route out."
lan_up 3
for k in 1 2 3; do run "$k" init --name "${names[$k]}"; done
say "# The laptop offers a pairing code and the phone joins with it (by address); then the phone offers one and the
# tablet joins (finding it by mDNS).
# Two pairings make one account of three: the laptop learns of the tablet from the phone's signed roster."
pair_shown() {
  local inviter="$1" joiner="$2" where=("${@:3}")
  printf '\n%s$ lattice pair\n' "${names[$inviter]}"
  on_exec "$inviter" "$L" pair --port 47300 --store "$LAN_DIR/h$inviter/store" > "$LAN_DIR/pair.out" 2> "$LAN_DIR/pair.err" &
  local pid=$!
  wait_until 10 "the ${names[$inviter]} offers a code" grep -q 'on the other device' "$LAN_DIR/pair.err"
  head -n 1 "$LAN_DIR/pair.out"; cat "$LAN_DIR/pair.err"
  run "$joiner" pair "$(head -n 1 "$LAN_DIR/pair.out")" "${where[@]}"
  wait "$pid" || fail "the ${names[$inviter]}'s pairing"
  tail -n +2 "$LAN_DIR/pair.out"
}
pair_shown 1 2 --peer 10.77.0.1:47300   # by address, as the laptop's screen says
pair_shown 2 3                           # or found by mDNS
run 1 zone create Movies

say "# Each runs the node, with no address given: they find each other by mDNS (_lattice._tcp)."
started=$(now)
for k in 1 2 3; do serve "$k"; echo "${names[$k]}\$ lattice serve &"; done
for k in 1 2 3; do wait_until 15 "${names[$k]} connects to the others" all_connected "$k" 1 2 3; done
say "# All three connected $(since "$started") s after the nodes started."
run 1 peers

say "# All three save at once, and all three retitle the same movie."
writers=()
for k in 1 2 3; do
  ( lat "$k" record save "Movies/pick-of-${names[$k]}" --type Movie "title=${names[$k]}'s pick" "rating:int=$k" >/dev/null
    lat "$k" record save Movies/toy-story --type Movie "title=Toy Story (${names[$k]})" "rating:int=$((k + 2))" >/dev/null ) &
  writers+=($!)
done
for writer in "${writers[@]}"; do wait "$writer"; done
wait_until 15 "the three converge" converged Movies 1 2 3
run 2 query Movie --zone Movies --sort title
run 1 account

say "# The tablet's cable is pulled. The others notice within seconds, from the connection itself (mDNS still lists it)."

lan_link 3 down
cut=$(now)
wait_until 15 "the others notice" not_connected_to 3 1 2
say "# Noticed after $(since "$cut") s. Both sides keep editing."
run 3 record save Movies/toy-story --type Movie "title=Toy Story (seen on the train)" "note=watched offline"
run 3 record save Movies/up --type Movie "title=Up" "rating:int=5"
run 1 record save Movies/toy-story --type Movie "title=Toy Story (1995)" "rating:int=1"
run 2 record delete Movies/pick-of-phone

say "# The cable is back: the tablet reconnects and everything merges."
lan_link 3 up
wait_until 30 "the tablet reconnects" all_connected 3 1 2 3
wait_until 15 "all converge" converged Movies 1 2 3
for k in 1 2 3; do run "$k" query Movie --zone Movies --sort title; done
run 1 conflicts Movies/toy-story
say "converged: the same records and the same conflicts on the laptop, the phone and the tablet."
