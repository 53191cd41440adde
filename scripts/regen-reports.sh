#!/usr/bin/env bash
# Regenerate reports/ from datasets/ (the test `reports_match_datasets`
# fails when the committed reports drift from what this produces).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${CRITIC_GATE:-target/release/critic-gate}
for d in seed multilingual floors costs; do
  "$bin" replay "datasets/$d.jsonl" --config datasets/gate.toml --out "reports/$d" --quiet
done
"$bin" replay datasets/invalid.jsonl --config datasets/gate.toml --out reports/invalid --skip-invalid --quiet
