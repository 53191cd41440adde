#!/usr/bin/env bash
# Seeds of the `check` fuzz target from the committed reports: each
# summary.json of this schema version, so the corpus reaches check's
# verdict and not only its refusals. Run after regenerating reports/.
set -euo pipefail
cd "$(dirname "$0")/.."
for r in seed multilingual costs floors fail-open; do
  cp "reports/$r/summary.json" "fuzz/corpus/check/seed-$r-summary.json"
done
# Seeds of the `partial` target: the decompressed partial results of two
# replays (one with --decisions changed), and two damaged copies (a
# formula planted in a row, the stream cut in half). Partial results carry
# the tool's version and tallies' shape, so run this after changing either.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# This source's binary (built if stale; the recipe check shares another
# checkout's target directory).
cargo build --release --locked -q --bin critic-gate
bin="${CARGO_TARGET_DIR:-target}/release/critic-gate"
"$bin" replay datasets/seed.jsonl --partial "$tmp/seed.p" --quiet
"$bin" replay datasets/floors.jsonl --partial "$tmp/floors.p" --decisions changed --quiet
zstd -dc "$tmp/seed.p" > fuzz/corpus/partial/seed
zstd -dc "$tmp/floors.p" > fuzz/corpus/partial/floors-changed
python3 - <<'PY'
d = 'fuzz/corpus/partial/'
raw = open(d + 'seed', 'rb').read()
open(d + 'damaged-formula-cell', 'wb').write(raw.replace(b',seed-1,', b',=cmd-1,', 1))
open(d + 'damaged-cut', 'wb').write(raw[: len(raw) // 2])
PY
