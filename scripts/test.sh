#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs it.
# This is the README's second command, and .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the tests use (kubectl 1.32 is already on every machine).
need=()
command -v kubectl >/dev/null || { echo "kubectl 1.32 is required on PATH" >&2; exit 1; }
for pkg in iproute2 procps nftables util-linux wget; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# Ray from PyPI: the local node's end-to-end tests run real Ray clusters.
.venv/bin/python -m pip install -q -e '.[test,ray]'

.venv/bin/ruff check src tests
.venv/bin/ruff format --check src tests
exec .venv/bin/python -m pytest -q "$@"
