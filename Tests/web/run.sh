#!/usr/bin/env bash
# The web checks (Tests/web/check.py) with the Python packages they need, pinned,
# in a virtual environment of their own under .build. Usage: run.sh LATTICE [ARTIFACTS]
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.build/web-venv
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
"$venv/bin/pip" install -q --disable-pip-version-check selenium==4.51.0 schemathesis==4.32.5 prometheus_client==0.26.0
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/python" Tests/web/check.py "$@"
