# Sourced by the CLI benchmarks, with their arguments: sets each option the
# script lists in OPTIONS (`--runs N` sets RUNS) and takes `--lattice PATH`
# (a binary to measure, an older build for a before/after); without it,
# builds the release `lattice`. Names the binary L. Needs HERE and USAGE.
ROOT="$(cd "$HERE/../.." && pwd)"
L=""
while [[ $# -gt 0 ]]; do
  name="${1#--}"
  if [[ "$1" == --lattice && $# -ge 2 ]]; then
    L="$2"; shift 2
  elif [[ " ${OPTIONS[*]} " == *" $name "* && $# -ge 2 ]]; then
    printf -v "${name^^}" '%s' "$2"; shift 2
  else
    echo "usage: $0 $USAGE" >&2; exit 2
  fi
done
if [[ -z "$L" ]]; then
  (cd "$ROOT" && swift build -c release --product lattice >&2)
  L="$ROOT/.build/release/lattice"
fi
