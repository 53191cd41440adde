#!/usr/bin/env bash
# Regenerate reports/ from datasets/ (the test `reports_match_datasets`
# fails when the committed reports drift from what this produces).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CRITIC_GATE:-target/release/critic-gate}
# Each report folder is written anew (a file no longer written must not stay).
rm -rf reports/seed reports/multilingual reports/floors reports/costs reports/fail-open \
  reports/threshold-0.7 reports/threshold-0.7-matched reports/invalid
for d in seed multilingual floors costs fail-open threshold-0.7; do
  "$bin" replay "datasets/$d.jsonl" --config datasets/gate.toml --out "reports/$d" --quiet
done
"$bin" replay datasets/threshold-0.7.jsonl --config datasets/gate-0.7.toml --out reports/threshold-0.7-matched --quiet
"$bin" replay datasets/invalid.jsonl --config datasets/gate.toml --out reports/invalid --skip-invalid --quiet
