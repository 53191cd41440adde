#!/usr/bin/env bash
# The Python package's tests (python/tests), in a fresh virtual environment:
# builds the wheel with maturin (reusing `cargo test --release`'s build of
# every shared crate), installs it with polars, Ray and pytest from the
# package index, and runs pytest. Run after `cargo test --release --locked`
# (the tests compare with the CLI it builds).
#
#   scripts/python-tests.sh            # a new venv in a temporary folder
#   VENV=.venv scripts/python-tests.sh # or one you keep
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "python-tests: $PYTHON not found (Python >= 3.9 is required)" >&2; exit 2; }
VENV="${VENV:-$(mktemp -d)/venv}"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "maturin>=1.9.4,<2" "polars>=1.0" "ray[data]>=2.40" pytest mypy "symfonic-core[otel]==9.12.0"
rm -rf target/wheels
"$VENV/bin/maturin" build --release --locked -m python/Cargo.toml -o target/wheels
# --force-reinstall: a kept venv (VENV=...) already has this version, and
# pip would keep the old build.
"$VENV/bin/pip" install --quiet --force-reinstall --no-deps target/wheels/critic_gate-*.whl
# From the repository root, so the source folder python/critic_gate does not
# shadow the installed package.
"$VENV/bin/pytest" -q -p no:cacheprovider python/tests
