#!/usr/bin/env bash
# Seeds of the `check` fuzz target from the committed reports: each
# summary.json of this schema version, so the corpus reaches check's
# verdict and not only its refusals. Run after regenerating reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
for r in seed multilingual costs floors fail-open; do
  cp "reports/$r/summary.json" "fuzz/corpus/check/seed-$r-summary.json"
done
