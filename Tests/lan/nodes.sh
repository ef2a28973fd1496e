# Lattice nodes on the simulated LAN (sourced after lan.sh, with L set to the
# lattice binary): stores, `lattice serve` per host, and the checks the
# scenarios and benchmarks wait on. Host K's store is $LAN_DIR/hK/store.

declare -A SERVE_PID=()
declare -A DEVICE=()

# `lattice ARGS` on host K, against its store.
lat() { local k="$1"; shift; on "$k" "$L" "$@" --store "$LAN_DIR/h$k/store"; }

device_id() {
  [ -n "${DEVICE[$1]:-}" ] || DEVICE[$1]="$(lat "$1" id)"
  echo "${DEVICE[$1]}"
}

# One account: each of hosts K... gets a store, and the first pairs in the
# others over the LAN (n-1 pairings, no `trust`); the others learn each
# other from the roster on their first sync.
account_init() {
  local k first="$1"
  for k in "$@"; do lat "$k" init --name "h$k" >/dev/null; done
  # The first joins by address, the others find the offer by mDNS (by address
  # too with PAIR_BY_ADDRESS=1, for runs whose subject is not pairing).
  local how=--peer
  for k in "${@:2}"; do pair_hosts "$first" "$k" $how >/dev/null; [ -n "${PAIR_BY_ADDRESS:-}" ] || how=""; done
  # Each joiner syncs once with the first, so all hold the whole roster before
  # the nodes start (else two joiners trust each other only once one of them
  # heard of the other from the first, which would skew discovery figures).
  [ "$#" -gt 2 ] || return 0
  serve "$first" --port 7700 --no-mdns
  for k in "${@:2}"; do lat "$k" sync --peer "10.77.0.$first:7700" --once --timeout 30 >/dev/null; done
  stop_serve "$first"
}

# pair_hosts INVITER JOINER [--peer]: `lattice pair` on INVITER prints a
# code; `lattice pair CODE` on JOINER finds it by mDNS (with --peer: at
# INVITER-ADDRESS:PORT) and joins its account. Prints the joiner's output
# (the verifier) and fails if either side does.
pair_hosts() {
  local inviter="$1" joiner="$2" how="${3:-}" pid status=0 where=()
  local out="$LAN_DIR/h$inviter/pair.out" err="$LAN_DIR/h$inviter/pair.err"
  : > "$err"
  on_exec "$inviter" "$L" pair --port 47300 --store "$LAN_DIR/h$inviter/store" > "$out" 2> "$err" &
  pid=$!
  wait_until 10 "h$inviter offers a pairing code" grep -q 'on the other device' "$err"
  [ "$how" = --peer ] && where=(--peer "10.77.0.$inviter:47300")
  lat "$joiner" pair "$(head -n 1 "$out")" "${where[@]}" || status=$?
  if [ "$status" != 0 ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; return "$status"; fi
  wait "$pid"
}

# Starts `lattice serve` on host K (mDNS on, no --peer), JSON events to hK/serve.out.
serve() {
  local k="$1"; shift
  : > "$LAN_DIR/h$k/serve.out"
  on_exec "$k" "$L" serve --json --store "$LAN_DIR/h$k/store" "$@" > "$LAN_DIR/h$k/serve.out" 2> "$LAN_DIR/h$k/serve.err" &
  SERVE_PID[$k]=$!
  wait_until 10 "serve starts on h$k" grep -q '"listening"' "$LAN_DIR/h$k/serve.out"
}

stop_serve() {
  kill -TERM "${SERVE_PID[$1]}" 2>/dev/null || true
  wait "${SERVE_PID[$1]}" 2>/dev/null || true
  unset "SERVE_PID[$1]"
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# wait_until SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds, or fails the run.
wait_until() {
  local seconds="$1" what="$2"; shift 2
  local deadline; deadline=$(awk -v s="$seconds" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
  until "$@" >/dev/null 2>&1; do
    if awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n > d) }'; then
      if declare -F fail >/dev/null; then fail "timed out after $seconds s: $what"; fi
      echo "timed out after $seconds s: $what" >&2; return 1
    fi
    sleep 0.05
  done
}

# peers_check HOST PYTHON-CONDITION ID...: the condition holds for every listed device in HOST's `peers --json`.
peers_check() {
  local k="$1" condition="$2"; shift 2
  lat "$k" peers --json | python3 -c '
import json, sys
peers = {p["deviceID"]: p for p in json.load(sys.stdin)["peers"]}
condition = sys.argv[1]
sys.exit(0 if all(eval(condition, {"p": peers.get(i)}) for i in sys.argv[2:]) else 1)' "$condition" "$@"
}

# all_connected K HOSTS...: host K lists every other of HOSTS as connected.
all_connected() {
  local k="$1" j ids=(); shift
  for j in "$@"; do [ "$j" = "$k" ] || ids+=("$(device_id "$j")"); done
  peers_check "$k" 'p is not None and p["connected"]' "${ids[@]}"
}

# not_connected_to TARGET K...: none of hosts K lists TARGET as connected.
not_connected_to() {
  local target; target="$(device_id "$1")"; shift
  local k
  for k in "$@"; do peers_check "$k" 'p is not None and not p["connected"]' "$target" || return 1; done
}

# discovered_untrusted K HOSTS...: host K sees each of HOSTS by mDNS, untrusted.
discovered_untrusted() {
  local k="$1" j ids=(); shift
  for j in "$@"; do ids+=("$(device_id "$j")"); done
  peers_check "$k" 'p is not None and p["discovered"] and not p["trusted"]' "${ids[@]}"
}

# events_at_least K EVENT N: host K's node has reported EVENT at least N times.
events_at_least() { [ "$(grep -c "\"event\":\"$2\"" "$LAN_DIR/h$1/serve.out")" -ge "$3" ]; }

zone_on() { local zone="$1" k; shift; for k in "$@"; do lat "$k" zone list | grep -q "^$zone" || return 1; done; }
has_record() { lat "$1" record get "$2" >/dev/null 2>&1; }
verified_in_sync() { lat "$1" peers | grep -q "verified in sync at"; }
diff_in_sync() { [ "$(lat "$1" diff "$2" 2>/dev/null)" = "in sync" ]; }
# public_on NAME HOSTS...: every one of HOSTS holds the public record NAME.
public_on() { local name="$1" k; shift; for k in "$@"; do lat "$k" record get "$name" --database public >/dev/null 2>&1 || return 1; done; }
# public_title_is NAME TITLE HOSTS...: the public record's title is TITLE on every one of HOSTS.
public_title_is() {
  local name="$1" title="$2" k; shift 2
  for k in "$@"; do
    [ "$(lat "$k" record get "$name" --database public --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["records"][0]["fields"]["title"]["value"])')" = "$title" ] || return 1
  done
}

# account_id K: host K's account ID (what `lattice share --with` takes).
account_id() { lat "$1" id --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["accountID"])'; }
# invited K ZONE: host K was offered a share of ZONE.
invited() { lat "$1" share invitations --json | python3 -c 'import json, sys; sys.exit(0 if any(i["zoneID"]["zoneName"] == sys.argv[1] for i in json.load(sys.stdin)["invitations"]) else 1)' "$2"; }
# shared_title_is ZONE/NAME TITLE HOSTS...: the shared record's title is TITLE on every one of HOSTS.
shared_title_is() {
  local path="$1" title="$2" k; shift 2
  for k in "$@"; do
    [ "$(lat "$k" record get "$path" --database shared --json 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["records"][0]["fields"]["title"]["value"])' 2>/dev/null)" = "$title" ] || return 1
  done
}
# share_permission_is K PERMISSION: host K's permission in the one shared zone it holds.
share_permission_is() { [ "$(lat "$1" share list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["shares"][0]["permission"])')" = "$2" ]; }

zone_count() {
  local zone="$1" count="$2" k; shift 2
  for k in "$@"; do
    [ "$(lat "$k" status --json | python3 -c 'import json, sys; print(sum(z["recordCount"] for z in json.load(sys.stdin)["zones"] if z["zoneID"]["zoneName"] == sys.argv[1]))' "$zone")" -ge "$count" ] || return 1
  done
}

count_records() { python3 -c 'import json, sys; print(len(json.load(sys.stdin)["records"]))'; }

# A zone's records as one comparable text (the change token, local to each store, left out).
zone_state() {
  lat "$1" changes "$2" --limit 100000 --json | python3 -c '
import json, sys
document = json.load(sys.stdin)
document.pop("syncToken", None)
document.pop("moreComing", None)
for key in ("records", "deleted", "deletedRecords"):
    if isinstance(document.get(key), list):
        document[key].sort(key=lambda r: json.dumps(r, sort_keys=True) if not isinstance(r, dict) else r.get("recordName", ""))
print(json.dumps(document, sort_keys=True))'
}

# converged ZONE K...: hosts K hold the same records in ZONE, and the same conflicts on ZONE/shared.
converged() {
  local zone="$1" first="$2" k reference conflicts; shift 2
  reference="$(zone_state "$first" "$zone")"
  conflicts="$(lat "$first" conflicts "$zone/shared" --json 2>&1 || true)"
  for k in "$@"; do
    local state other
    state="$(zone_state "$k" "$zone")"
    other="$(lat "$k" conflicts "$zone/shared" --json 2>&1 || true)"
    if [ "$state" != "$reference" ] || [ "$other" != "$conflicts" ]; then
      # Kept for the failure report: what differs, the last time it was checked.
      diff <(echo "$reference" | python3 -m json.tool; echo "$conflicts") <(echo "$state" | python3 -m json.tool; echo "$other") \
        > "$LAN_DIR/not-converged.diff" || true
      return 1
    fi
  done
}

doctor_says() {
  local k="$1" subject="$2" text="$3"
  # doctor exits 69 when it finds a problem, which is what is looked for here.
  { lat "$k" doctor 2>&1 || true; } | grep -F "$subject" | grep -qF "$text"
}

generate_records() {
  python3 -c '
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"recordName": "item-%05d" % i, "recordType": "Item",
                      "fields": {"title": {"value": "item %d" % i}, "rank": {"value": i}}}))' "$1"
}
