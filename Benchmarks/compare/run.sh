#!/usr/bin/env bash
# Compare Lattice's merge throughput and encoded size with Loro's import.
# Usage: Benchmarks/compare/run.sh [--records N]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"

RECORDS=100000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) RECORDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--records N]" >&2; exit 2 ;;
  esac
done

if [[ ! -x "$VENV/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$VENV"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check loro==1.17.1

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

echo "== Loro import ($RECORDS records)" >&2
"$VENV/bin/python" "$HERE/loro_import.py" --records "$RECORDS" > "$TMP/loro.jsonl"

echo "== Lattice merge ($RECORDS records)" >&2
# Build chatter on stdout is fine: compare.py only reads JSON lines.
swift run -c release --package-path "$ROOT/Benchmarks" lattice-merge-figures \
  --records "$RECORDS" > "$TMP/lattice.jsonl"

"$VENV/bin/python" "$HERE/compare.py" "$TMP/loro.jsonl" "$TMP/lattice.jsonl"
