#!/usr/bin/env bash
# Lattice on a simulated LAN (root only): real `lattice serve` processes, real
# avahi-daemons, real mDNS, no --peer anywhere. h1-h3 are one account (they
# trust each other); h4 is another account on the same LAN.
#   (a) h1-h3 discover each other and converge after concurrent edits;
#   (b) h3's cable is pulled: the others notice within seconds from the
#       connection itself; both sides edit; plugged back, all converge and
#       show the same conflicts;
#   (c) h4 sees the others in `peers` but receives nothing of their private
#       database (it syncs the public database with them, as any device may);
#   (d) h2 restarts and rediscovers;
#   (e) 10,000 records saved on h1 arrive on h2 and h3;
#   (f) avahi-daemon dies under a running node: one clear line, doctor names
#       it, and discovery comes back with the daemon; three times more on a
#       host with connected peers, which keeps running and syncing;
#   (g) the public database spreads between the two accounts with no address
#       given, and only a record's creator changes it;
#   (h) h1's account shares a zone with h4's;
#   (i) an asset saved on h1 is fetched by h3 from h2 while h1 is cut off;
#   (j) the nodes compare digests after syncing; `lattice diff` through a
#       running node finds a row removed from h3's file behind its back, and
#       the next sync's comparison sends it to h3 again;
#   (k) a spoofed pairing offer with the code's hint, advertised before the
#       real one, does not make `lattice pair CODE` fail.
# Usage: Tests/lan/scenarios.sh [path/to/lattice]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
L="$(realpath "${1:-$HERE/../../.build/debug/lattice}")"
source "$HERE/lan.sh"
source "$HERE/nodes.sh"

fail() {
  echo "FAILED: $*" >&2
  if [ -s "$LAN_DIR/not-converged.diff" ]; then echo "--- what differed at the last check" >&2; head -n 40 "$LAN_DIR/not-converged.diff" >&2; fi
  for k in $(seq "$LAN_HOSTS"); do
    echo "--- h$k serve output (last 15 lines)" >&2
    grep -v '"progress"' "$LAN_DIR/h$k/serve.out" 2>/dev/null | tail -n 15 >&2 || true
    if grep -q "Program crashed" "$LAN_DIR/h$k/serve.err" 2>/dev/null; then
      grep -A30 "crashed:" "$LAN_DIR/h$k/serve.err" >&2
    else
      tail -n 5 "$LAN_DIR/h$k/serve.err" >&2 2>/dev/null || true
    fi
  done
  exit 1
}
step() { printf '\n== %s\n' "$*"; }

lan_up 4
account_init 1 2 3
lat 4 init --name h4 >/dev/null
for k in 1 2 3 4; do serve "$k"; done

step "(a) three hosts discover each other with no --peer, and converge after concurrent edits"
started=$(now)
for k in 1 2 3; do wait_until 10 "h$k lists the other two connected" all_connected "$k" 1 2 3; done
echo "all three connected $(since "$started") s after the last node started"
lat 1 zone create Movies >/dev/null
wait_until 10 "the zone reaches h2 and h3" zone_on Movies 2 3
writers=()
for k in 1 2 3; do
  ( for i in $(seq 1 20); do lat "$k" record save "Movies/h$k-$i" --type Movie "title=from h$k #$i" "rating:int=$i" >/dev/null; done
    lat "$k" record save Movies/shared --type Movie "title=h$k was here" "rating:int=$k" >/dev/null ) &
  writers+=($!)
done
for writer in "${writers[@]}"; do wait "$writer" || fail "a writer failed"; done
wait_until 15 "h1-h3 converge" converged Movies 1 2 3
[ "$(lat 1 query Movie --zone Movies --json | count_records)" = 61 ] || fail "expected 61 records after the concurrent edits"
echo "61 records and the shared one's conflicts identical on h1, h2, h3"

step "(b) h3 is cut off; both sides edit; it comes back"
lan_link 3 down
cut=$(now)
wait_until 12 "h1 and h2 notice the cut" not_connected_to 3 1 2
echo "h1 and h2 noticed the cut after $(since "$cut") s (keepalive; mDNS still lists h3)"
lat 1 record save Movies/shared --type Movie "title=h1 while h3 was away" "rating:int=100" >/dev/null
lat 3 record save Movies/shared --type Movie "title=h3 offline" "note=written on the island" >/dev/null
lat 3 record save Movies/island --type Movie "title=only on h3" >/dev/null
lat 2 record delete Movies/h1-1 >/dev/null
lan_link 3 up
wait_until 20 "h3 reconnects" all_connected 3 1 2 3
wait_until 15 "all converge after the cut" converged Movies 1 2 3
lat 1 conflicts Movies/shared --json | grep -q '"losingValue"' || fail "the concurrent writes to Movies/shared left no conflict on h1"
echo "converged; Movies/shared shows the same conflicts on h1, h2, h3"

step "(c) h4, another account on the LAN, sees the others but receives none of their data"
wait_until 10 "h4 lists h1-h3 as discovered, untrusted" discovered_untrusted 4 1 2 3
wait_until 10 "h1 lists h4 as discovered, untrusted" discovered_untrusted 1 4
[ "$(lat 4 zone list --json)" = "$(lat 4 zone list --json | grep -v Movies)" ] || fail "h4 received a zone of h1-h3"
lat 4 record get Movies/shared >/dev/null 2>&1 && fail "h4 holds a record of h1-h3"
wait_until 5 "doctor on h1 says h4 is not trusted" doctor_says 1 "$(device_id 4)" "not trusted here"
doctor_says 1 "note    device $(device_id 4)" "not trusted here" || fail "doctor on h1 counts an untrusted device as a problem"
echo "h4 lists h1-h3 (trusted: no) and holds none of their records"

step "(d) h2 restarts and rediscovers"
stop_serve 2
wait_until 10 "h1 notices h2 left" not_connected_to 2 1
wait_until 10 "h2 is no longer connected on h4 (a stranger there: listed only while present, or among the recent ones)" peers_check 4 'p is None or not p["connected"]' "$(device_id 2)"
lat 1 record save Movies/while-h2-was-down --type Movie "title=missed it" >/dev/null
restarted=$(now)
serve 2
wait_until 10 "h2 reconnects to h1 and h3" all_connected 2 1 2 3
echo "h2 connected again $(since "$restarted") s after its restart"
wait_until 10 "h2 catches up" has_record 2 Movies/while-h2-was-down

step "(e) 10,000 records saved on h1 arrive on h2 and h3"
lat 1 zone create Bulk >/dev/null
generate_records 10000 > "$LAN_DIR/bulk.jsonl"
saved=$(now)
lat 1 record import Bulk "$LAN_DIR/bulk.jsonl" >/dev/null
wait_until 30 "10,000 records on h2 and h3" zone_count Bulk 10000 2 3
echo "10,000 records on h2 and h3 $(since "$saved") s after the import began"
converged Bulk 1 2 3 || fail "Bulk differs"

step "(f) avahi-daemon dies under a running node, and comes back"
on 4 sh -c 'kill -TERM "$(cat /run/avahi-daemon/pid)"'
wait_until 10 "h4's node reports mDNS unavailable" grep -q "avahi-daemon is not running" "$LAN_DIR/h4/serve.err"
[ "$(grep -c "mDNS discovery is off" "$LAN_DIR/h4/serve.err")" = 1 ] || fail "expected exactly one line about mDNS on h4's stderr"
grep -qi "bonjour" "$LAN_DIR/h4/serve.err" && fail "Avahi's compatibility warning reached the user"
wait_until 5 "doctor on h4 names the missing daemon" doctor_says 4 "mDNS" "avahi-daemon is not running"
lan_start_avahi 4
wait_until 15 "h4's discovery comes back" grep -q '"discoveryAvailable"' "$LAN_DIR/h4/serve.out"
wait_until 10 "h4 sees h1-h3 again" discovered_untrusted 4 1 2 3
# Again on h1, which has connected peers and lookups under way, three times over.
for round in 1 2 3; do
  on 1 sh -c 'kill -TERM "$(cat /run/avahi-daemon/pid)"'
  wait_until 10 "h1 reports outage $round" events_at_least 1 discoveryUnavailable "$round"
  lan_start_avahi 1
  wait_until 15 "h1 discovers again after outage $round" events_at_least 1 discoveryAvailable "$round"
done
kill -0 "${SERVE_PID[1]}" || fail "h1's node died with its daemon"
[ "$(grep -c "mDNS discovery is off" "$LAN_DIR/h1/serve.err")" = 3 ] || fail "expected one line per outage on h1's stderr"
lat 2 record save Movies/after-outages --type Movie "title=still syncing" >/dev/null
wait_until 10 "h1 still syncs with h2" has_record 1 Movies/after-outages

step "(g) the public database spreads across the two accounts with no address given"
lat 4 record save lamp --type Item "title=Lamp from h4" --database public >/dev/null
lat 1 record save chair --type Item "title=Chair from h1" --database public >/dev/null
spread=$(now)
wait_until 20 "h4's public record reaches h1-h3" public_on lamp 1 2 3
wait_until 20 "h1's public record reaches h4" public_on chair 4
echo "both public records on every host $(since "$spread") s after they were saved"
status=0; lat 4 record save chair --type Item "title=taken" --database public >/dev/null 2>&1 || status=$?
[ "$status" = 77 ] || fail "h4's edit of h1's public record exited $status, not 77"
lat 1 record save chair --type Item "title=Chair, mended" --database public >/dev/null
wait_until 20 "h1's edit of its public record reaches h4" public_title_is chair "Chair, mended" 4
lat 4 record get Movies/shared >/dev/null 2>&1 && fail "h4 holds a record of h1-h3's private database"
peers_check 1 'p is not None and p["access"] in ("public only", None)' "$(device_id 4)" || fail "h1 shows h4 with more than the public database"
echo "h4's edit refused (77), h1's spread; h4 still holds none of the private database"

step "(h) h1's account shares a zone with h4's, with no address given"
lat 1 zone create Family >/dev/null
lat 1 record save Family/list --type Item "title=Milk" >/dev/null
lat 1 share Family --with "$(account_id 4)" >/dev/null
offered=$(now)
wait_until 20 "h4 is offered the share" invited 4 Family
lat 4 share accept Family >/dev/null
wait_until 20 "the shared zone reaches h4 and h2-h3" shared_title_is Family/list Milk 4 2 3
echo "the shared zone on h4 $(since "$offered") s after it was shared"
lat 4 record save Family/eggs --type Item "title=Eggs from h4" --database shared >/dev/null
wait_until 20 "h4's write reaches h1-h3" shared_title_is Family/eggs "Eggs from h4" 1 2 3
lat 1 share Family --with "$(account_id 4)" --read-only >/dev/null
wait_until 20 "h4 learns it is read-only now" share_permission_is 4 readOnly
status=0; lat 4 record save Family/more --type Item "title=More" --database shared >/dev/null 2>&1 || status=$?
[ "$status" = 77 ] || fail "a read-only participant's write exited $status, not 77"
lat 4 record get Movies/shared >/dev/null 2>&1 && fail "h4 holds a record of h1-h3's private database"
echo "h4's write reached h1-h3 while read-write, and is refused at once (77) once read-only"
step "(i) an asset saved on h1 is fetched by h3 while h1 is cut off, from h2"
head -c 3000000 /dev/urandom > "$LAN_DIR/poster.bin"
lat 1 record save Movies/poster --type Movie "poster:asset=$LAN_DIR/poster.bin" >/dev/null
wait_until 20 "the record reaches h2 and h3" has_record 2 Movies/poster
wait_until 20 "the record reaches h3" has_record 3 Movies/poster
lat 3 record get Movies/poster | grep -q "content not here yet" || fail "h3 has a 3 MB asset's content before it asked for it"
lat 2 asset fetch Movies/poster --timeout 30 >/dev/null || fail "h2 could not fetch the asset from h1"
lan_link 1 down
fetched=$(now)
copy=$(lat 3 asset fetch Movies/poster poster --timeout 30 | sed -n 's/^poster: \(.*\) (3000000 bytes)$/\1/p')
[ -n "$copy" ] || fail "h3 could not fetch the asset with h1 cut off"
cmp -s "$copy" "$LAN_DIR/poster.bin" || fail "h3's copy of the asset differs from h1's file"
echo "h3 fetched the 3 MB asset from h2 in $(since "$fetched") s with h1 cut off; byte-identical"
lan_link 1 up
wait_until 20 "h1 reconnects" all_connected 1 1 2 3

step "(j) digests compared after syncs; diff finds a row removed behind h3's back, and the nodes send it again"
lat 1 record save Movies/lost --type Movie "title=to be lost on h3" >/dev/null
wait_until 20 "the record reaches h3" has_record 3 Movies/lost
wait_until 30 "h2 shows h1 verified in sync" verified_in_sync 2
wait_until 30 "lattice diff through h2's node says in sync with h1" diff_in_sync 2 "$(device_id 1)"
python3 - "$LAN_DIR/h3/store/lattice.sqlite" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=10)
db.execute("DELETE FROM records WHERE name = 'lost'")
db.commit()
PY
has_record 3 Movies/lost && fail "the row removed from h3's file still reads"
status=0; lat 3 diff "$(device_id 1)" Movies >"$LAN_DIR/diff.out" 2>/dev/null || status=$?
[ "$status" = 1 ] && [ "$(cut -f1 "$LAN_DIR/diff.out")" = "Movies/lost" ] || fail "diff on h3 did not find exactly the row removed (exit $status: $(cat "$LAN_DIR/diff.out"))"
repaired=$(now)
lat 1 record save Movies/after-j --type Movie "title=after (j)" >/dev/null
wait_until 30 "h3 holds Movies/lost again" has_record 3 Movies/lost
echo "diff found the removed row; the comparison after the next sync sent it back in $(since "$repaired") s"

step "(k) a spoofed pairing offer carrying the code's hint does not make pair CODE fail"
# Both offers listen without mDNS and are advertised by hand (avahi-publish), the spoof first, on
# the joiner's own host: a joiner that tried only the first offer it found would meet its wrong key.
mkdir -p "$LAN_DIR/h3/pairing"
on_exec 4 "$L" pair --no-mdns --port 47301 --store "$LAN_DIR/h4/store" > "$LAN_DIR/h4/real.out" 2> "$LAN_DIR/h4/real.err" &
real=$!
on 3 "$L" init --store "$LAN_DIR/h3/pairing/spoof" >/dev/null
on_exec 3 "$L" pair --no-mdns --port 47302 --store "$LAN_DIR/h3/pairing/spoof" > "$LAN_DIR/h3/spoof.out" 2> "$LAN_DIR/h3/spoof.err" &
spoof=$!
wait_until 10 "both offers listen" sh -c "grep -q 'on the other device' '$LAN_DIR/h4/real.err' && grep -q 'on the other device' '$LAN_DIR/h3/spoof.err'"
code=$(head -n 1 "$LAN_DIR/h4/real.out")
hint=$(python3 -c 'import hashlib, sys; c = sys.argv[1].upper().replace("-", ""); print(hashlib.blake2b(b"lattice pair hint" + c.encode(), digest_size=16).digest()[:1].hex())' "$code")
on_exec 3 avahi-publish -s "0 spoofed offer" _lattice-pair._tcp 47302 "container=default" "hint=$hint" > /dev/null 2>&1 &
published_spoof=$!
on 3 "$L" init --store "$LAN_DIR/h3/pairing-joiner" >/dev/null
sleep 1
# The real offer is still being announced (avahi probes a name for about 0.8 s) when the joiner
# finds the spoof: only a joiner that waits for more offers than the first one meets it.
on_exec 4 avahi-publish -s "z real offer" _lattice-pair._tcp 47301 "container=default" "hint=$hint" > /dev/null 2>&1 &
published_real=$!
sleep 0.4
status=0; on 3 "$L" pair "$code" --store "$LAN_DIR/h3/pairing-joiner" > "$LAN_DIR/h3/joiner.out" 2>&1 || status=$?
kill "$published_spoof" "$published_real" "$spoof" 2>/dev/null || true
wait "$published_spoof" "$published_real" "$spoof" 2>/dev/null || true
[ "$status" = 0 ] || { kill "$real" 2>/dev/null || true; fail "pair CODE failed beside a spoofed offer (exit $status): $(cat "$LAN_DIR/h3/joiner.out"); the real offer said: $(cat "$LAN_DIR/h4/real.err"); the spoof: $(cat "$LAN_DIR/h3/spoof.err")"; }
wait "$real" || fail "the real offer did not end paired"
echo "pair CODE joined h4's account with a spoofed offer of the same hint advertised first"

step "every scenario passed"
