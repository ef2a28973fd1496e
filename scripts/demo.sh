#!/usr/bin/env bash
# The main job: two replicas edit concurrently and converge by change sets.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product lattice-demo
exec .build/debug/lattice-demo
