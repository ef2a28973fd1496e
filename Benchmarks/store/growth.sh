#!/usr/bin/env bash
# How time, peak memory and store size grow with the records (issue 39, item 5):
# Benchmarks/store/rss.sh at each size, then each figure's factor per 10x.
# Usage: Benchmarks/store/growth.sh [--sizes "10000 100000 1000000"]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SIZES="10000 100000 1000000"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sizes) SIZES="$2"; shift 2 ;;
    *) echo "usage: $0 [--sizes '10000 100000 1000000']" >&2; exit 2 ;;
  esac
done
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
for n in $SIZES; do "$HERE/rss.sh" --records "$n" | tee -a "$OUT"; done
python3 - "$OUT" <<'PY'
import json, re, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
by = {}
for row in rows:
    figure = re.sub(r"\d[\d,]* (records|lines)", r"N \1", row["figure"])
    by.setdefault(figure, []).append(row)
print("| figure | records | seconds | peak MB | store MB | x per 10x (time / memory / store) |")
print("|---|---:|---:|---:|---:|---|")
for figure, runs in by.items():
    runs.sort(key=lambda r: r["records"])
    for previous, row in zip([None] + runs, runs):
        factor = ""
        if previous and previous["records"] * 10 == row["records"]:
            ratio = lambda key: f"{row[key] / previous[key]:.1f}" if previous[key] else "-"
            factor = f"{ratio('seconds')} / {ratio('peak_mb')} / {ratio('store_mb')}"
        print(f"| {figure} | {row['records']:,} | {row['seconds']} | {row['peak_mb']} | {row['store_mb']} | {factor} |")
PY
