#!/usr/bin/env bash
# Proves ARCHITECTURE.md's recipe for a new count, its rate and a release
# budget is whole: in a scratch copy of the tracked tree it adds one
# (`production_fires`, `production_fire_rate = production_fires /
# production_known`, `max_production_fire_rate`) by editing exactly the
# four source files the recipe names, and nothing else by hand, then shows
#   1. the copy builds and all its Rust tests pass, the CLI suite's
#      included, once what the recipe says to regenerate is (docs/reports.md,
#      reports/, the check fuzz seeds) and the budget has its docs/ci.md
#      row;
#   2. a replay writes the new figures, `check` judges the new budget, a
#      summary.json whose new rate was edited by hand is refused, and a
#      merge of two shards gives the one replay's figures;
#   3. the same count without its merge does not compile.
# It shares this checkout's target directory (only the copy's own crates
# are built again) and puts back the files cargo copies to its top level.
# The copy's crates have this checkout's names there, so at the end the
# script forgets their fingerprints: this checkout's next build compiles
# its own crates again (a few minutes); nothing else is touched.
# Usage: scripts/recipe-check.sh   (about 5 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/scratch-copy.sh "recipe-check"

# --- The recipe: four source files (and a row of docs). ---------------------
# 1. src/replay/tally/mod.rs: the count, and its merge and difference (the
#    compiler names every field there).
count_and_merge() {
  edit src/replay/tally/mod.rs "    pub production_known: u64,
    /// ... where production fired" "    pub production_known: u64,
    /// Turns whose recording says production's gate fired.
    #[serde(default)]
    pub production_fires: u64,
    /// ... where production fired"
}
merge_lines() {
  edit src/replay/tally/mod.rs "            production_known: self.production_known - o.production_known," \
"            production_known: self.production_known - o.production_known,
            production_fires: self.production_fires - o.production_fires,"
  edit src/replay/tally/mod.rs "            production_known,
            production_fired_variant_skips," "            production_known,
            production_fires,
            production_fired_variant_skips,"
  edit src/replay/tally/mod.rs "        self.production_known += production_known;" \
"        self.production_known += production_known;
        self.production_fires += production_fires;"
}
# 2. src/replay/step.rs: where a turn adds to it.
turn_adds() {
  edit src/replay/step.rs "        production_known: f.production.is_some() as u64," \
"        production_known: f.production.is_some() as u64,
        production_fires: (f.production == Some(true)) as u64,"
}
count_and_merge
merge_lines
turn_adds
# 3. src/summary/metrics.rs: the figure (a count of the tally), its rate
#    (a count over a count) and a new schema version.
edit src/summary/metrics.rs "pub const SCHEMA_VERSION: u64 = " "pub const SCHEMA_VERSION: u64 = 1 + "
edit src/summary/metrics.rs "pub(crate) const SCHEMA_CHANGES: &[(u64, &str)] = &[" \
"pub(crate) const SCHEMA_CHANGES: &[(u64, &str)] = &[
    (SCHEMA_VERSION, \"new \`production_fires\` and \`production_fire_rate\`\"),"
edit src/summary/metrics.rs "    production_agreement: Option<f64>," \
"    production_fires: u64 = counts.production_fires, \"turns\",
        \"turns whose recording says production's gate fired\";
    production_fire_rate: Option<f64> = production_fires / production_known, \"share\",
        \"production_fires / production_known\";
    production_agreement: Option<f64>,"
# 4. crates/core/src/budgets.rs: the budget, declared once.
edit crates/core/src/budgets.rs "    MaxSkipWorstCaseRegressionRate,
}" "    MaxSkipWorstCaseRegressionRate,
    MaxProductionFireRate,
}"
edit crates/core/src/budgets.rs "pub const BUDGETS: [Declared; 12] = [" "pub const BUDGETS: [Declared; 13] = [
    Declared {
        budget: Budget::MaxProductionFireRate,
        key: \"max_production_fire_rate\",
        long: \"max-production-fire-rate\",
        limit: Limit::Rate,
        op: Op::AtMost,
        figure: \"production_fire_rate\",
        of: Whose::Production,
        when_null: WhenNull::NoProductionRecord,
        risk: false,
        help: \"Fail when production's gate fired on more than R of the turns that record it\",
    },"

# The budget's row in docs/ci.md, for people (a CLI test holds every
# budget to one).
edit docs/ci.md "| \`--max-added-call-rate R\` | \`added_call_rate <= R\` |" \
"| \`--max-added-call-rate R\` | \`added_call_rate <= R\` |
| \`--max-production-fire-rate R\` | \`production_fire_rate <= R\` (production's variant's) |"

cd "$work"
echo "recipe-check: 1. the copy with a new count, rate and budget builds and its tests pass"
quiet() { # run a command, its output shown only when it fails
  "$@" >"$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt"; echo "recipe-check: failed: $*" >&2; exit 1; }
  grep "^test result" "$tmp/log.txt" | sed 's/^/  /'
}
# The generated files the recipe says to regenerate: docs/reports.md and
# the committed reports (a library test reads one).
CRITIC_GATE_BLESS=1 quiet cargo test --release --locked -q -p critic-gate --lib docs_reports_md
CRITIC_GATE_BLESS=1 quiet cargo test --release --locked -q -p critic-gate --test cli reports_match_datasets
scripts/fuzz-check-seeds.sh
quiet cargo test --release --locked -q -p critic-gate --lib
quiet cargo test --release --locked -q -p critic-gate --test cli
quiet cargo test --release --locked -q -p critic-gate-core --lib budgets

echo "recipe-check: 2. replay, check, a hand-edited rate, merge"
cargo build --release --locked -q -p critic-gate --bin critic-gate
cg="$CARGO_TARGET_DIR/release/critic-gate"
out="$tmp/out"
"$cg" replay datasets/seed.jsonl --config datasets/gate.toml --out "$out/one" --quiet
python3 - "$out/one/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
v = s["variants"][s["baseline"]]
fires, known, rate = v["production_fires"], v["production_known"], v["production_fire_rate"]
assert known > 0 and 0 < fires <= known, (fires, known)
assert abs(rate - fires / known) < 1e-9, (rate, fires, known)
print(f"  production_fires {fires} of production_known {known}: production_fire_rate {rate}")
EOF
check_exits() { # CODE PATTERN WHAT: check the folder; it must exit CODE saying PATTERN
  local code=0
  "$cg" check "$out/one" --max-production-fire-rate 0 >"$tmp/check.txt" 2>&1 || code=$?
  [ "$code" = "$1" ] && grep -q "$2" "$tmp/check.txt" \
    || { cat "$tmp/check.txt"; echo "recipe-check: $3 (exit $code)" >&2; exit 1; }
}
check_exits 1 "max_production_fire_rate" "check did not fail the new budget"
echo "  check --max-production-fire-rate 0 fails it (exit 1)"
python3 - "$out/one/summary.json" <<'EOF'
import json, os, sys
p = sys.argv[1]
s = json.load(open(p))
s["variants"][s["baseline"]]["production_fire_rate"] = 0.0
json.dump(s, open(p, "w"))
# Without its marker (and manifest) the folder is judged on the checks
# between its files alone, the one tried here: the figure against its
# counts.
os.remove(os.path.join(os.path.dirname(p), ".critic-gate-report"))
EOF
check_exits 2 "production_fire_rate is 0" "a hand-edited production_fire_rate was not refused"
echo "  a hand-edited production_fire_rate is refused (exit 2): $(grep -o 'production_fire_rate is [^,]*, but [^ ]* / [^ ]* is [0-9.]*' "$tmp/check.txt")"
head -n 10 datasets/seed.jsonl >"$tmp/a.jsonl"
tail -n +11 datasets/seed.jsonl >"$tmp/b.jsonl"
"$cg" replay "$tmp/a.jsonl" --config datasets/gate.toml --partial "$out/a.partial" --quiet
"$cg" replay "$tmp/b.jsonl" --config datasets/gate.toml --partial "$out/b.partial" --quiet
"$cg" merge "$out/a.partial" "$out/b.partial" --out "$out/merged" --quiet
python3 - "$out/merged/summary.json" "$out/one/summary.json" <<'EOF'
import json, sys
merged, one = ((s, s["variants"][s["baseline"]]) for s in map(json.load, map(open, sys.argv[1:])))
m, o = merged[1]["production_fires"], one[1]["production_fires"]
assert m == o, (m, o)
print(f"  a merge of two shards counts production_fires {m}, as the one replay")
EOF

echo "recipe-check: 3. the count without its merge does not compile"
cd "$root"
rm -rf "$work"
mkdir -p "$work"
tar -xf "$tmp/tree.tar" -C "$work"
count_and_merge
turn_adds
cd "$work"
if cargo check --release --locked -q -p critic-gate --lib 2>"$tmp/build.txt"; then
  echo "recipe-check: a count left out of the merge compiled" >&2
  exit 1
fi
grep -E "error\[E0027\].*production_fires" "$tmp/build.txt" | head -n 2 | sed 's/^/  /'
echo "recipe-check: the recipe is whole"
