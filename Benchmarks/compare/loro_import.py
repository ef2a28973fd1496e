"""Measure Loro's LoroDoc.import_ of an update blob carrying N*8 field writes.

Prints one JSON line per scenario:
  {"system":"loro","scenario":...,"fieldWrites":...,"seconds":...,"bytes":...}
where seconds is the best of --runs timings of the import_ call alone.

Layout: one root LoroMap per record, named by the record id ("r000000"), one
map key per field. Root maps are addressed by name, so two peers writing the
same record concurrently write into the *same* container and Loro resolves each
field by its map LWW (that is what half-lose needs). Child maps created with
insert_container would fork on concurrent creation (the whole record then wins
or loses as one), and mergeable child maps (ensure_mergeable_map) cost one
extra op per record and were ~20% slower and ~30% bigger to import. Root maps
also write exactly 8 ops per record. The record type ("Track") is implicit:
the workload has a single type, and prefixing it to the root name only made
Loro slower and bigger, so leaving it out favours Loro.

Dates have no Loro type; `released` is stored as int milliseconds.
"""

import argparse
import json
import sys
import time

from loro import ExportMode, LoroDoc, VersionVector

import workload as wl

# Map LWW in Loro orders concurrent writes by (lamport, peer id); the receiver
# always gets the larger peer id so it wins ties.
SENDER_PEER = 1
RECEIVER_PEER = 2

_values_cache: dict = {}


def values(g: int, n: int) -> list:
    """record_values(i, g) for i < n, cached: generating is slower than Loro."""
    key = (g, n)
    if key not in _values_cache:
        _values_cache[key] = [wl.record_values(i, g) for i in range(n)]
    return _values_cache[key]


def write(doc: LoroDoc, indices, g: int, n: int) -> int:
    """Write generation g of the given records into doc, as a single commit.

    Returns the number of ops recorded. Loro records no op when a map key is
    set to the value it already holds, so this can be less than 8 per record.
    """
    gen = values(g, n)
    before = doc.len_ops
    for i in indices:
        m = doc.get_map(wl.record_name(i))
        v = gen[i]
        for f in wl.FIELDS:
            m.insert(f, v[f])
    doc.commit()
    return doc.len_ops - before


def new_doc(peer: int) -> LoroDoc:
    doc = LoroDoc()
    doc.peer_id = peer
    return doc


def check(doc: LoroDoc, n: int, expected, scenario: str) -> None:
    """Fail loudly unless doc holds n*8 values and each field of record i
    shows the value of one of the generations expected(i) returns.

    Checked per field, not per record: LWW resolves each field on its own.
    """
    state = doc.get_deep_value()
    count = sum(len(m) for m in state.values())
    if count != n * wl.FIELDS_PER_RECORD:
        sys.exit(f"{scenario}: doc holds {count} values, expected {n * wl.FIELDS_PER_RECORD}")
    for i in range(n):
        got = state.get(wl.record_name(i)) or {}
        gens = expected(i)
        for f in wl.FIELDS:
            if not any(got.get(f) == values(g, n)[i][f] for g in gens):
                sys.exit(f"{scenario}: {wl.record_name(i)}.{f} is {got.get(f)!r}, "
                         f"expected generation {gens}")


def measure(scenario: str, blob: bytes, make_receiver, expected, n: int, runs: int) -> dict:
    best = float("inf")
    for _ in range(runs):
        doc = make_receiver()  # fresh receiver per run, built outside the timing
        t0 = time.perf_counter()
        status = doc.import_(blob)
        elapsed = time.perf_counter() - t0
        if status.pending is not None:
            sys.exit(f"{scenario}: import left pending changes: {status.pending}")
        check(doc, n, expected, scenario)
        best = min(best, elapsed)
    return {
        "system": "loro",
        "scenario": scenario,
        "fieldWrites": n * wl.FIELDS_PER_RECORD,
        "seconds": best,
        "bytes": len(blob),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=wl.DEFAULT_RECORDS)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    n, runs = args.records, args.runs
    evens = range(0, n, 2)
    tenth = range(0, n, 10)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    log(f"loro: building sender with {n} records")
    # Sender A: generation 0 of every record; blob0 carries all of it.
    a = new_doc(SENDER_PEER)
    field_writes = n * wl.FIELDS_PER_RECORD
    ops0 = write(a, range(n), 0, n)
    base_vv = a.oplog_vv
    blob0 = a.export(ExportMode.Updates(VersionVector()))
    # Then A rewrites every record with generation 1; blob1 is the delta.
    ops1 = write(a, range(n), 1, n)
    blob1 = a.export(ExportMode.Updates(base_vv))
    # Each blob must carry exactly n*8 field writes (see write()).
    if (ops0, ops1) != (field_writes, field_writes):
        sys.exit(f"sender recorded {ops0} and {ops1} ops, expected {field_writes} each")

    # (a) empty: a fresh doc imports everything.
    log("loro: empty")
    results = [measure("empty", blob0, LoroDoc, lambda i: (0,), n, runs)]

    # (b) half-lose: the receiver already edited every even record, twice
    # (generation 1, then 2), concurrently with A. Its 4n ops get lamports
    # 0..4n-1 and 4n..8n-1, so its final write to record i, field f has lamport
    # 4n + 4i + f > 8i + f, the lamport of A's write: every even field the
    # receiver holds beats the incoming one, and the odd ones are new.
    def half_lose_receiver():
        b = new_doc(RECEIVER_PEER)
        write(b, evens, 1, n)
        write(b, evens, 2, n)
        return b

    log("loro: half-lose")
    results.append(measure("half-lose", blob0, half_lose_receiver,
                           lambda i: (2,) if i % 2 == 0 else (0,), n, runs))

    # (c) concurrent-10pct: B synced generation 0 (imported and materialised
    # outside the timing), then rewrote every 10th record with generation 2
    # while A rewrote all records with generation 1. B imports A's delta.
    # Who wins on B's records is Loro's lamport order, field by field: A's
    # writes carry the larger lamports except on part of record 0, so on B's
    # records we accept either generation. (B records only 7 ops per record:
    # `liked` is the same in generations 0 and 2, and Loro skips that write.)
    def concurrent_receiver():
        b = new_doc(RECEIVER_PEER)
        b.import_(blob0)
        b.get_deep_value()  # make sure the synced state is loaded, not lazy
        write(b, tenth, 2, n)
        return b

    log("loro: concurrent-10pct")
    results.append(measure("concurrent-10pct", blob1, concurrent_receiver,
                           lambda i: (1, 2) if i % 10 == 0 else (1,), n, runs))

    for r in results:
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
