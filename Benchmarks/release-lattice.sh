# Sourced by the RSS scripts: takes [--records N] (default 1,000,000) into
# RECORDS, builds the release `lattice` and names it L. Needs HERE set.
ROOT="$(cd "$HERE/../.." && pwd)"
RECORDS=1000000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) RECORDS="$2"; shift 2 ;;
    *) echo "usage: $0 [--records N]" >&2; exit 2 ;;
  esac
done
(cd "$ROOT" && swift build -c release --product lattice >&2)
L="$ROOT/.build/release/lattice"
