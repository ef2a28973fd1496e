# Sourced by the demo scripts: builds the CLI, makes a scratch directory and the
# two stores' options, and defines how commands are echoed and checked.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/install-deps.sh
swift build --product lattice >/dev/null
lattice=".build/debug/lattice"
work="$(mktemp -d)"
laptop=(--store "$work/laptop")
phone=(--store "$work/phone")
say() { printf '\n$ %s\n' "$*"; }
# Echo each command quoted as it must be typed, then run it.
run() { say "lattice $(printf '%q ' "$@")"; "$lattice" "$@"; }
# Fails unless both stores answer the query and show the record's conflicts alike.
expect_converged() {
  local record="$1"
  if [ "$("$lattice" query Movie --zone Movies --json "${laptop[@]}")" = "$("$lattice" query Movie --zone Movies --json "${phone[@]}")" ]; then
    echo; echo "converged: identical query --json output on both stores"
  else
    echo; echo "NOT converged" >&2; exit 1
  fi
  if [ "$("$lattice" conflicts "$record" --json "${laptop[@]}")" != "$("$lattice" conflicts "$record" --json "${phone[@]}")" ]; then
    echo "the stores show different conflicts" >&2; exit 1
  fi
}
