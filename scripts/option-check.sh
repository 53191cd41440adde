#!/usr/bin/env bash
# Proves an option is declared once: in a scratch copy of the tracked tree
# it adds a replay option, `--scratch-share SHARE` (a share in (0, 1],
# default 0.25), by editing two source files and nothing else by hand:
#   crates/core/src/options.rs  its setting, its declaration, and replay's
#                               set of options;
#   src/pipeline/mod.rs         the engine reads it (a note in summary.json).
# Then, once the Python stub is regenerated from the declarations (as
# docs/reports.md is from the schema), it shows
#   1. `replay --help` lists it, with its default;
#   2. the CLI and Python both take it: the same default (0.25) and the
#      same note from a given value, and the same refusal of 2, each in its
#      own spelling (`--scratch-share`, `scratch_share`);
#   3. `mypy --strict` holds a Python call to it: a value of the right type
#      passes, a text is refused.
# It shares this checkout's target directory, as scripts/recipe-check.sh
# does, and builds the Python package into a virtual environment of its
# own (maturin, polars and mypy from the package index).
# Usage: scripts/option-check.sh   (about 4 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/scratch-copy.sh "option-check"

# --- The two source files. ---------------------------------------------------
edit crates/core/src/options.rs 'settings! {
' 'settings! {
    ScratchShare = "--scratch-share",
'
edit crates/core/src/options.rs "production's own reviews of the turns it draws)\";
" "production's own reviews of the turns it draws)\";
    SCRATCH_SHARE: ScratchShare, Kind::Share { zero: false, one: true }, Preset::Share(0.25), Some(\"SHARE\"), true,
        \"A share the option check added\";
"
edit crates/core/src/options.rs 'pub static REPLAY: &[&Decl] = run_set!(DECISIONS,' \
  'pub static REPLAY: &[&Decl] = run_set!(SCRATCH_SHARE, DECISIONS,'
edit src/pipeline/mod.rs 'pub(crate) fn run_to(
    opts: ReplayOptions,
    targets: Targets,
    progress: &dyn Progress,
) -> crate::Result<(Outcome, Vec<u8>)> {' 'pub(crate) fn run_to(
    mut opts: ReplayOptions,
    targets: Targets,
    progress: &dyn Progress,
) -> crate::Result<(Outcome, Vec<u8>)> {
    if let Some(x) = opts.flags.share(crate::options::Setting::ScratchShare) {
        opts.outputs.notes.push(format!("scratch share {x}"));
    }'
cd "$work"
quiet() { # run a command, its output shown only when it fails
  "$@" >"$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt"; echo "option-check: failed: $*" >&2; exit 1; }
}
# What the declarations generate: the Python stub.
CRITIC_GATE_BLESS=1 quiet cargo test --release --locked -q -p critic-gate --lib python_flags
grep -q "scratch_share: Optional\[float\]" python/critic_gate/_flags.py \
  || { echo "option-check: the stub does not type scratch_share" >&2; exit 1; }
# What changed, against the tracked tree: the two source files and the stub.
mkdir "$tmp/pristine" && tar -xf "$tmp/tree.tar" -C "$tmp/pristine"
changed=$(git -c core.quotepath=off diff --no-index --name-only "$tmp/pristine" "$work" 2>/dev/null \
  | grep -v "^$work/target" | sed "s|^$work/||" | sort || true)
echo "option-check: the files that differ from the tracked tree:"
echo "$changed" | sed 's/^/  /'
[ "$(echo "$changed" | tr '\n' ' ')" = "crates/core/src/options.rs python/critic_gate/_flags.py src/pipeline/mod.rs " ] \
  || { echo "option-check: expected the two source files and the stub only" >&2; exit 1; }

echo "option-check: 1. --help"
quiet cargo build --release --locked -q -p critic-gate --bin critic-gate
cg="$CARGO_TARGET_DIR/release/critic-gate"
"$cg" replay --help | grep -- "--scratch-share" | sed 's/^ */  /'
"$cg" replay --help | grep -q -- "--scratch-share <SHARE> *A share the option check added \[default: 0.25\]" \
  || { echo "option-check: replay --help does not list --scratch-share with its default" >&2; exit 1; }

echo "option-check: 2. the CLI and Python, alike"
out="$tmp/out"
"$cg" replay datasets/seed.jsonl --config datasets/gate.toml --out "$out/cli-default" --quiet
"$cg" replay datasets/seed.jsonl --config datasets/gate.toml --out "$out/cli-given" --quiet --scratch-share 0.5
code=0
"$cg" replay datasets/seed.jsonl --out "$out/cli-bad" --quiet --scratch-share 2 2>"$tmp/cli-bad.txt" || code=$?
[ "$code" = 2 ] && [ ! -e "$out/cli-bad" ] \
  || { cat "$tmp/cli-bad.txt"; echo "option-check: --scratch-share 2 was not refused (exit $code)" >&2; exit 1; }
grep -o "invalid value '2' for '--scratch-share <SHARE>': .*" "$tmp/cli-bad.txt" | sed 's/^/  CLI:    /'
# Shards carry it: a merge replays with it, and refuses shards that differ.
head -n 10 datasets/seed.jsonl >"$tmp/a.jsonl"
tail -n +11 datasets/seed.jsonl >"$tmp/b.jsonl"
"$cg" replay "$tmp/a.jsonl" --partial "$out/a.partial" --quiet --scratch-share 0.5
"$cg" replay "$tmp/b.jsonl" --partial "$out/b.partial" --quiet --scratch-share 0.5
"$cg" replay "$tmp/b.jsonl" --partial "$out/c.partial" --quiet
"$cg" merge "$out/a.partial" "$out/b.partial" --out "$out/merged" --quiet
grep -q '"scratch share 0.5"' "$out/merged/summary.json" \
  || { echo "option-check: the merge lost --scratch-share" >&2; exit 1; }
code=0
"$cg" merge "$out/a.partial" "$out/c.partial" --out "$out/mixed" --quiet 2>"$tmp/mixed.txt" || code=$?
[ "$code" = 2 ] && grep -q -- "(--scratch-share differ;" "$tmp/mixed.txt" \
  || { cat "$tmp/mixed.txt"; echo "option-check: shards with other --scratch-share values merged (exit $code)" >&2; exit 1; }
echo "  merge: shards at 0.5 merge with its note; one at the default is refused: --scratch-share differ"

python3 -m venv "$tmp/venv"
quiet "$tmp/venv/bin/pip" install --quiet "maturin>=1.9.4,<2" "polars>=1.0" mypy
quiet "$tmp/venv/bin/maturin" build --release --locked -m python/Cargo.toml -o "$tmp/wheels"
quiet "$tmp/venv/bin/pip" install --quiet --no-deps "$tmp"/wheels/critic_gate-*.whl
cd "$tmp"   # not the copy's python/ folder: the installed package
"$tmp/venv/bin/python" -W ignore - "$work" "$out" <<'EOF'
import json, sys
from pathlib import Path
import critic_gate
work, out = map(Path, sys.argv[1:])
seed, gate = work / "datasets/seed.jsonl", work / "datasets/gate.toml"

def notes(folder: Path) -> list[str]:
    return json.loads((folder / "summary.json").read_text())["notes"]

for name, given, want in (("default", {}, "scratch share 0.25"), ("given", {"scratch_share": 0.5}, "scratch share 0.5")):
    critic_gate.replay(seed, config=gate, out=out / f"py-{name}", label=f"cli-{name}", format="both", **given)
    assert want in notes(out / f"py-{name}"), (name, notes(out / f"py-{name}"))
    assert notes(out / f"py-{name}") == notes(out / f"cli-{name}"), name
    print(f"  {name}: {want!r} in summary.json's notes, from the CLI and from Python")
try:
    critic_gate.replay(seed, out=out / "py-bad", scratch_share=2)
    sys.exit("option-check: scratch_share=2 was not refused")
except critic_gate.UsageError as e:
    assert str(e) == "scratch_share: give a share in (0, 1], got 2", str(e)
    assert not (out / "py-bad").exists()
    print(f"  Python: UsageError({str(e)!r})")
EOF

echo "option-check: 3. mypy --strict holds a call to it"
cat >"$tmp/good.py" <<'EOF'
import critic_gate
critic_gate.replay("t.jsonl", scratch_share=0.5)
EOF
cat >"$tmp/bad.py" <<'EOF'
import critic_gate
critic_gate.replay("t.jsonl", scratch_share="half")
EOF
quiet "$tmp/venv/bin/python" -m mypy --strict --cache-dir "$tmp/mypy" "$tmp/good.py"
echo "  scratch_share=0.5 passes"
if "$tmp/venv/bin/python" -m mypy --strict --cache-dir "$tmp/mypy" "$tmp/bad.py" >"$tmp/mypy.txt" 2>&1; then
  echo "option-check: mypy passed scratch_share=\"half\"" >&2; exit 1
fi
grep -o 'error: .*' "$tmp/mypy.txt" | head -n 1 | sed 's/^/  scratch_share="half": /'
echo "option-check: one declaration reaches the CLI, Python and --help"
