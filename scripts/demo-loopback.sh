#!/usr/bin/env bash
# The main job without a simulated LAN (scripts/demo.sh runs this when it cannot
# create network namespaces): two devices (a laptop and a phone, two stores on
# this machine) pair with a short code, run `lattice serve`, and sync over encrypted
# TCP on loopback: saves reach the other side at once, edits made while one is
# offline merge when it comes back. On loopback there is no mDNS between them,
# so the phone is given the laptop's address with --peer.
set -euo pipefail
source "$(dirname "$0")/demo-common.sh"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# Starts `lattice serve` in the background; `port` is then the port it listens on.
serve() {
  local log="$1"; shift
  "$lattice" serve --port 0 --listen 127.0.0.1 --no-mdns "$@" > "$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    if grep -q "listening on port" "$log"; then port="$(sed -n 's/^listening on port //p' "$log" | head -1)"; return; fi
    sleep 0.1
  done
  echo "serve did not start: $(cat "$log")" >&2; exit 1
}
wait_for() { for _ in $(seq 100); do if eval "$1" >/dev/null 2>&1; then return 0; fi; sleep 0.05; done; echo "timed out: $1" >&2; exit 1; }

run init --name laptop "${laptop[@]}"
run init --name phone "${phone[@]}"
echo; echo "# The laptop offers a pairing code; the phone joins with it: together they are one account."
"$lattice" pair --port 0 --listen 127.0.0.1 --no-mdns "${laptop[@]}" > "$work/pair.out" 2> "$work/pair.err" &
inviter=$!
wait_for "grep -q 'on the other device' '$work/pair.err'"
pair_port="$(sed -n 's/.*THIS-HOST:\([0-9]*\).*/\1/p' "$work/pair.err")"
say "lattice pair --port 0 --listen 127.0.0.1 --no-mdns ${laptop[*]} &   # prints the code: $(head -n 1 "$work/pair.out")"
run pair "$(head -n 1 "$work/pair.out")" --peer "127.0.0.1:$pair_port" "${phone[@]}"
wait "$inviter"
tail -n +2 "$work/pair.out"
run zone create Movies "${laptop[@]}"
run record save Movies/toy-story --type Movie 'title=Toy Story' rating:int=4 "${laptop[@]}"

echo; echo "# Both run the node; the phone dials the laptop."
serve "$work/laptop.log" "${laptop[@]}"
laptop_port="$port"
say "lattice serve --port 0 --listen 127.0.0.1 --no-mdns ${laptop[*]} &   # prints: listening on port $laptop_port"
serve "$work/phone.log" --peer "127.0.0.1:$laptop_port" "${phone[@]}"
say "lattice serve --port 0 --listen 127.0.0.1 --no-mdns --peer 127.0.0.1:$laptop_port ${phone[*]} &"
wait_for "\"$lattice\" record get Movies/toy-story ${phone[*]}"
run record get Movies/toy-story "${phone[@]}"

echo; echo "# A save on either side reaches the other at once (push on commit, no polling)."
run record save Movies/up --type Movie title=Up rating:int=5 "${phone[@]}"
wait_for "\"$lattice\" record get Movies/up ${laptop[*]}"
run record get Movies/up "${laptop[@]}"
run peers "${laptop[@]}"

echo; echo "# The phone goes offline; both edit toy-story, and the phone deletes up while the laptop edits it."
kill -TERM "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true
run record save Movies/toy-story --type Movie rating=5 'title=Toy Story (1995)' "${laptop[@]}"
run record save Movies/toy-story --type Movie rating=3 'note=watch with the kids' "${phone[@]}"
run record save Movies/up --type Movie rating=1 "${laptop[@]}"
run record delete Movies/up "${phone[@]}"

echo; echo "# Back online: one sync exchanges exactly what each side lacks."
run sync --peer "127.0.0.1:$laptop_port" --once "${phone[@]}"
run query Movie --zone Movies --sort title "${laptop[@]}"
run query Movie --zone Movies --sort title "${phone[@]}"
expect_converged Movies/toy-story
echo; echo "# The losing rating travels with the record: both show the same conflict."
run conflicts Movies/toy-story "${laptop[@]}"
run status "${laptop[@]}"
