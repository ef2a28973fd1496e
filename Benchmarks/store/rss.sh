#!/usr/bin/env bash
# Peak resident memory (and time) of the release `lattice` binary on a store
# of N records (default 1,000,000, the merge workload's shape): importing the
# lines, indexing two fields, a sorted filtered page with and without
# indexes, writing all records to a bundle and applying it to an empty store.
# Syncing the same records between two nodes is Benchmarks/sync/rss.sh.
# Usage: Benchmarks/store/rss.sh [--records N]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../release-lattice.sh"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

python3 "$HERE/../workload_lines.py" "$RECORDS" > "$TMP/lines.jsonl"

# Runs one lattice command and prints its figure as a JSON line: wall time,
# the peak resident set of that process alone, and the size of the store it
# ran on afterwards (the database and its log, in MB).
measure() {
  local figure="$1"; shift
  python3 - "$figure" "$L" "$@" <<'PY'
import json, os, resource, subprocess, sys, time
figure, command = sys.argv[1], sys.argv[2:]
start = time.monotonic()
done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
seconds = time.monotonic() - start
if done.returncode != 0:
    sys.exit(f"{figure}: exit {done.returncode}: {done.stderr.decode()}")
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
store = command[command.index("--store") + 1]
size = sum(os.path.getsize(os.path.join(store, name)) for name in os.listdir(store) if name.startswith("lattice.sqlite"))
print(json.dumps({"figure": figure, "records": int(os.environ["RECORDS"]), "seconds": round(seconds, 2), "peak_mb": peak,
                  "store_mb": round(size / 1e6, 1)}))
PY
}
export RECORDS

"$L" init --store "$TMP/a" >/dev/null
"$L" zone create Tracks --store "$TMP/a" >/dev/null
measure "import $RECORDS lines" record import Tracks "$TMP/lines.jsonl" --store "$TMP/a"
measure "index title (sortable) over $RECORDS records" schema index Track title --sortable --store "$TMP/a"
measure "index rating (queryable) over $RECORDS records" schema index Track rating --queryable --store "$TMP/a"
measure "page of 50, indexed (rating >= 500000, sorted by title)" query Track --zone Tracks --where 'rating >= 500000' --sort title --limit 50 --store "$TMP/a"
measure "page of 50, no index (plays >= 500000, sorted by artist)" query Track --zone Tracks --where 'plays >= 500000' --sort artist --limit 50 --store "$TMP/a"
measure "bundle create of $RECORDS records" bundle create -o "$TMP/all.bundle" Tracks --store "$TMP/a"
"$L" init --store "$TMP/b" >/dev/null
measure "bundle apply of $RECORDS records to an empty store" bundle apply "$TMP/all.bundle" --store "$TMP/b"
