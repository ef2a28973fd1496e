#!/usr/bin/env bash
# The whole test suite: unit, property, store-on-disk and crash tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
