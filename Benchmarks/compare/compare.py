"""Compare Lattice merge figures with Loro import figures.

Reads JSON lines from the files given as arguments (or stdin):
  {"system":"loro","scenario":...,"fieldWrites":...,"seconds":...,"bytes":...}
  {"system":"lattice","scenario":...,"mode":"memory"|"store","fieldWrites":...,"seconds":...,"bytes":...}
Other lines (build output and the like) are ignored. If a (system, scenario,
mode) appears more than once, the fastest line is kept.

Prints a table per scenario and mode, then the targets:
  in-memory merge >= 2x Loro import (issue 39), persisted (store) merge >= 1.5x Loro
  import, encoded bytes per field write <= Loro's.
"""

import fileinput
import json
import sys

SCENARIOS = ("empty", "half-lose", "concurrent-10pct")
MODES = ("memory", "store")
SPEED_TARGETS = (("memory", 2.0, "in-memory merge >= 2x Loro import"),
                 ("store", 1.5, "persisted merge >= 1.5x Loro import"))


def read(paths):
    """{(system, scenario, mode): line}; Loro lines get mode None."""
    best = {}
    for raw in fileinput.input(paths or ("-",)):
        raw = raw.strip()
        if not raw.startswith("{"):
            continue
        try:
            r = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if not isinstance(r, dict) or r.get("system") not in ("loro", "lattice"):
            continue
        key = (r["system"], r["scenario"], r.get("mode") if r["system"] == "lattice" else None)
        if key not in best or r["seconds"] < best[key]["seconds"]:
            best[key] = r
    return best


def speed(r):
    return r["fieldWrites"] / r["seconds"]


def bytes_per_write(r):
    return r["bytes"] / r["fieldWrites"]


def main():
    data = read(sys.argv[1:])
    found = {s for (_, s, _) in data}
    scenarios = [s for s in SCENARIOS if s in found] + sorted(found - set(SCENARIOS))

    # Rows: (scenario, mode, lattice line, loro line); either may be missing.
    rows = []
    for s in scenarios:
        loro = data.get(("loro", s, None))
        modes = [m for m in MODES if ("lattice", s, m) in data]
        modes += sorted(m for (sy, sc, m) in data if sy == "lattice" and sc == s and m not in MODES)
        for m in modes or ["-"]:
            rows.append((s, m, data.get(("lattice", s, m)), loro))

    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    header = ("scenario", "mode", "lattice writes/s", "loro writes/s", "speed x",
              "lattice B/write", "loro B/write", "bytes x")
    table = []
    for s, m, lat, loro in rows:
        ls, os_ = (speed(lat) if lat else None), (speed(loro) if loro else None)
        lb, ob = (bytes_per_write(lat) if lat else None), (bytes_per_write(loro) if loro else None)
        if lat and loro and lat["fieldWrites"] != loro["fieldWrites"]:
            print(f"warning: {s}/{m}: lattice has {lat['fieldWrites']} field writes, "
                  f"loro {loro['fieldWrites']}", file=sys.stderr)
        table.append((s, m, fmt(ls, ",.0f"), fmt(os_, ",.0f"),
                      fmt(ls / os_ if ls and os_ else None, ".2f"),
                      fmt(lb, ".2f"), fmt(ob, ".2f"),
                      fmt(lb / ob if lb and ob else None, ".2f")))
    widths = [max(len(str(row[c])) for row in [header] + table) for c in range(len(header))]
    for row in [header] + table:
        print("  ".join(str(v).rjust(w) if c >= 2 else str(v).ljust(w)
                        for c, (v, w) in enumerate(zip(row, widths))))
    print("(writes = field writes; speed x and bytes x are Lattice / Loro)")
    print()

    # Targets: every scenario Loro was measured on must meet it, so a scenario
    # without a Lattice figure is a miss; the worst scenario is shown.
    loro_scenarios = [s for s in scenarios if ("loro", s, None) in data]

    def report(label, ratios, covered, worst_of, ok, unit):
        missing = [s for s in loro_scenarios if s not in covered]
        if not ratios:
            print(f"MISS  {label}: no data")
            return
        worst, where = worst_of(ratios)
        passed = ok(worst) and not missing
        note = f"; no Lattice figure for {', '.join(missing)}" if missing else ""
        print(f"{'PASS' if passed else 'MISS'}  {label}: worst {worst:.2f}x{unit} ({where}){note}")

    for mode, factor, label in SPEED_TARGETS:
        pairs = [(speed(lat) / speed(loro), s) for s, m, lat, loro in rows
                 if m == mode and lat and loro]
        report(label, pairs, {s for _, s in pairs}, min, lambda w: w >= factor, "")

    pairs = [(bytes_per_write(lat) / bytes_per_write(loro), f"{s}/{m}")
             for s, m, lat, loro in rows if lat and loro]
    covered = {s for s, m, lat, loro in rows if lat and loro}
    report("bytes per field write <= Loro's", pairs, covered, max, lambda w: w <= 1.0, " Loro's")


if __name__ == "__main__":
    main()
