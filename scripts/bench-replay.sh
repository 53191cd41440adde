#!/usr/bin/env bash
# Replay benchmark: generate traffic with `synth` in three mixes (default:
# mostly English; multilingual: about half the drafts not ASCII;
# unknown-keys: the default mix with a `trace_id` and an `app_version`,
# keys the format does not know, on every other line, as production
# recorders write them), then
# measure for each, in the same run, a parse-only pass (the floor: reading
# + JSON parsing) against a full replay (two variants, every report) on one
# pinned core, with one worker and with a worker per core (reader and
# writer threads unpinned), with peak memory from /usr/bin/time -v. Then a
# sweep of 108 variants against a 2-variant replay, and a last step
# streams 10,000,000 turns through stdin to check that memory stays flat.
# The transcripts step (TRANSCRIPTS turns, default 200,000; 0 skips it)
# replays synthetic chat transcripts `--from openai-chat` against a replay
# of the same turns imported, times `import`, and times the derivation
# alone (intent verdict and fabrication findings) against symfonic-core's
# own Python on the same turns, on one core each (SYMFONIC_PYTHON: a
# Python with symfonic-core 9.12.0 installed; without it that row is
# skipped). REAL_TRANSCRIPTS=FILE adds the same rows for a file of real
# conversations (scripts/real_transcripts.py). OTLP_COPIES=N adds
# `replay --from otlp` and `import --from otlp` of N copies of the sample
# traces (scripts/otlp_copies.py; 10 turns a copy).
#
#   [REPS=3] [MIXES="default multilingual unknown-keys"] [BEFORE=path/to/old/critic-gate] [NO_SWEEP=1] \
#     [TRANSCRIPTS=200000] [REAL_TRANSCRIPTS=real.jsonl] [SYMFONIC_PYTHON=python3] \
#     [OTLP_COPIES=10000] scripts/bench-replay.sh [TURNS=1000000] [BIG=10000000]
#
# With BEFORE, every replay row is also measured with that binary (e.g. a
# build of the previous commit), interleaved in the same run, so a change's
# cost is read against a baseline measured under the same load. BIG=0
# skips the memory check.
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-1000000}
big=${2:-10000000}
out=bench-out
mkdir -p "$out"
# Report folders of earlier runs (maybe of older builds) go first.
rm -rf "$out/replay" "$out/replay-before" "$out/big" "$out/sweep"
cargo build --release --quiet
bin=target/release/critic-gate
cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

# Each configuration runs $REPS times (default 3; the machine may be
# shared): the row gives the median run, and the range of wall times.
reps=${REPS:-3}
measure() { # label, command...
  local label=$1; shift
  local runs=()
  for _ in $(seq "$reps"); do
    /usr/bin/time -v "$@" 2> "$out/time.txt" > "$out/stdout.txt"
    local secs rss
    secs=$(grep 'Elapsed (wall clock)' "$out/time.txt" | awk -F': ' '{print $2}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    rss=$(grep 'Maximum resident set size' "$out/time.txt" | awk -F': ' '{print $2}')
    runs+=("$secs $rss")
  done
  local row
  row=$(printf '%s\n' "${runs[@]}" | sort -n | awk -v label="$label" -v turns="$turns" -v mb="$mb" '
    { s[NR] = $1; r[NR] = $2 }
    END {
      m = int((NR + 1) / 2)
      printf "%s %-34s %6.2f s (%.2f-%.2f) %9.0f turns/s %7.1f MB/s  peak %6.1f MB\n",
        s[m], label, s[m], s[1], s[NR], turns / s[m], mb / s[m], r[m] / 1024
    }')
  median=${row%% *}
  echo "${row#* }"
}

# The replay's cost over the parse-only floor of the same run: its share
# of parse-only throughput, and its time as a multiple of parse-only's.
ratio() { # parse-only median, replay median
  awk -v p="$1" -v r="$2" 'BEGIN { printf "%-34s %6.0f%% of parse-only throughput (%.2fx its time)\n", "  replay vs parse-only", 100 * p / r, r / p }'
}

for mix in ${MIXES:-default multilingual unknown-keys}; do
file="$out/traffic-$mix-$turns.jsonl"
if [ ! -f "$file" ]; then
  if [ "$mix" = unknown-keys ]; then
    # As production recorders write lines: keys the format does not know
    # (a trace id and an app version) on every other line, the default mix
    # otherwise. (sed, not awk: mawk took ten minutes over 500,000 lines;
    # the values are constant, as only the keys cost the reader anything.)
    "$bin" synth --turns "$turns" --seed 1 --mix default --out "$file.tmp"
    sed '1~2s/^{/{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","app_version":"2.4.1",/' "$file.tmp" > "$file"
    rm "$file.tmp"
  else
    "$bin" synth --turns "$turns" --seed 1 --mix "$mix" --out "$file"
  fi
fi
mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$file")/1e6}")
echo
echo "mix $mix: $turns turns, $mb MB ($(awk "BEGIN{printf \"%.0f\", $(stat -c %s "$file")/$turns}") bytes/turn)"

# One core: every thread (reader, worker, writer) pinned to CPU 0.
if command -v taskset >/dev/null; then
  measure "parse-only, 1 core" taskset -c 0 "$bin" parse-only "$file" --threads 1
  parse=$median
  measure "replay (2 variants), 1 core" taskset -c 0 "$bin" replay "$file" --out "$out/replay" --threads 1 --quiet
  ratio "$parse" "$median"
  if [ -n "${BEFORE:-}" ]; then
    measure "  BEFORE replay, 1 core" taskset -c 0 "$BEFORE" replay "$file" --out "$out/replay-before" --threads 1 --quiet
    ratio "$parse" "$median"
  fi
fi
for t in 1 "$cores"; do
  measure "parse-only, $t worker(s)" "$bin" parse-only "$file" --threads "$t"
  parse=$median
  measure "replay (2 variants), $t worker(s)" "$bin" replay "$file" --out "$out/replay" --threads "$t" --quiet
  ratio "$parse" "$median"
  if [ -n "${BEFORE:-}" ]; then
    measure "  BEFORE replay, $t worker(s)" "$BEFORE" replay "$file" --out "$out/replay-before" --threads "$t" --quiet
    ratio "$parse" "$median"
  fi
done

done

# A sweep's cost per variant: 108 variants against a replay of 2, both
# without decisions.csv (a sweep writes none), on the default mix.
file="$out/traffic-default-$turns.jsonl"
if [ -f "$file" ] && [ -z "${NO_SWEEP:-}" ]; then
  mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$file")/1e6}")
  echo
  echo "sweep: default mix, $cores worker(s)"
  measure "replay (2 variants, no decisions)" "$bin" replay "$file" --config datasets/gate.toml --out "$out/replay" --decisions none --quiet
  two=$median
  measure "sweep (108 variants)" "$bin" sweep "$file" --config scripts/bench-sweep.toml --out "$out/sweep" --quiet
  awk -v a="$two" -v b="$median" 'BEGIN { printf "%-34s %6.1fx the 2-variant replay'"'"'s time\n", "  sweep vs replay", b / a }'
fi

# The rows for one file of OpenAI-chat conversations: `replay --from`
# against a replay of the same turns imported, `import` alone, and the
# derivations alone on one pinned core against symfonic-core's on the
# same turns. With BEFORE, `import`, `replay --from` and `derive` are
# also measured with that binary.
transcript_rows() { # file, label
  local file=$1 label=$2 direct
  "$bin" import "$file" --from openai-chat --config datasets/transcripts.toml --out "$out/imported.jsonl" --quiet
  turns=$(wc -l < "$out/imported.jsonl")
  mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$file")/1e6}")
  echo
  echo "$label: $turns turns in $(wc -l < "$file") conversations, $mb MB, $cores worker(s)"
  measure "import --from openai-chat" "$bin" import "$file" --from openai-chat --config datasets/transcripts.toml --out "$out/imported.jsonl" --quiet
  if [ -n "${BEFORE:-}" ]; then
    # --skip-invalid: an older build may refuse conversations this one reads.
    measure "  BEFORE import" "$BEFORE" import "$file" --from openai-chat --config datasets/transcripts.toml --out "$out/imported-before.jsonl" --skip-invalid --quiet
    echo "  (BEFORE imported $(wc -l < "$out/imported-before.jsonl") of the $turns turns)"
  fi
  measure "replay --from openai-chat" "$bin" replay "$file" --from openai-chat --config datasets/transcripts.toml --out "$out/replay" --quiet
  direct=$median
  if [ -n "${BEFORE:-}" ]; then
    measure "  BEFORE replay --from" "$BEFORE" replay "$file" --from openai-chat --config datasets/transcripts.toml --out "$out/replay-before" --skip-invalid --quiet
  fi
  measure "replay of the imported traffic" "$bin" replay "$out/imported.jsonl" --config datasets/transcripts.toml --out "$out/replay" --quiet
  awk -v a="$median" -v b="$direct" 'BEGIN { printf "%-34s %6.2fx the imported replay'"'"'s time\n", "  --from openai-chat vs imported", b / a }'
  python3 scripts/bench_derive.py inputs "$file" "$out/derive-inputs.jsonl"
  local pin=()
  command -v taskset >/dev/null && pin=(taskset -c 0)
  local rust up
  rust=$("${pin[@]}" "$bin" derive --time "$out/derive-inputs.jsonl")
  echo "derivation alone, 1 core: critic-gate $(echo "$rust" | awk '{printf "%.0f turns/s (%s turns in %s s, %s findings)", $1/$2, $1, $2, $3}')"
  if [ -n "${BEFORE:-}" ]; then
    echo "derivation alone, 1 core: BEFORE $("${pin[@]}" "$BEFORE" derive --time "$out/derive-inputs.jsonl" | awk '{printf "%.0f turns/s (%s turns in %s s, %s findings)", $1/$2, $1, $2, $3}')"
  fi
  local py=${SYMFONIC_PYTHON:-python3}
  if "$py" -c 'import symfonic' 2>/dev/null; then
    up=$("${pin[@]}" "$py" scripts/bench_derive.py upstream "$out/derive-inputs.jsonl")
    echo "derivation alone, 1 core: symfonic-core $(echo "$up" | awk '{printf "%.0f turns/s (%s turns in %s s, %s findings)", $1/$2, $1, $2, $3}')"
    echo "$rust $up" | awk '{ printf "%-34s %6.1fx upstream per core\n", "  critic-gate vs symfonic-core", ($1/$2) / ($4/$5) }'
  else
    echo "  (no symfonic-core for $py: set SYMFONIC_PYTHON to compare with upstream)"
  fi
}

transcripts=${TRANSCRIPTS:-200000}
if [ "$transcripts" != 0 ]; then
  file="$out/transcripts-$transcripts.jsonl"
  [ -f "$file" ] || "$bin" synth --shape openai-chat --turns "$transcripts" --seed 1 --out "$file"
  transcript_rows "$file" "synthetic transcripts"
fi
# Real model output (scripts/real_transcripts.py builds the file from
# tau-bench's released trajectories).
if [ -n "${REAL_TRANSCRIPTS:-}" ]; then
  transcript_rows "$REAL_TRANSCRIPTS" "real transcripts ($REAL_TRANSCRIPTS)"
fi

# Traces: OTLP_COPIES=N copies of the sample traces (scripts/otlp_copies.py),
# replayed and imported `--from otlp`, beside BEFORE.
if [ -n "${OTLP_COPIES:-}" ]; then
  file="$out/otlp-$OTLP_COPIES.jsonl"
  [ -f "$file" ] || python3 scripts/otlp_copies.py "$file" "$OTLP_COPIES" > /dev/null
  turns=$(( OTLP_COPIES * 10 ))
  mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$file")/1e6}")
  echo
  echo "traces: $OTLP_COPIES copies of the sample traces, $turns turns, $mb MB, $cores worker(s)"
  measure "replay --from otlp" "$bin" replay "$file" --from otlp --out "$out/replay" --quiet
  if [ -n "${BEFORE:-}" ]; then
    measure "  BEFORE replay --from otlp" "$BEFORE" replay "$file" --from otlp --out "$out/replay-before" --quiet
  fi
  measure "import --from otlp" "$bin" import "$file" --from otlp --out "$out/imported-otlp.jsonl" --quiet
  if [ -n "${BEFORE:-}" ]; then
    measure "  BEFORE import --from otlp" "$BEFORE" import "$file" --from otlp --out "$out/imported-otlp-before.jsonl" --quiet
  fi
fi

[ "$big" = 0 ] && exit 0

echo "memory check: $big turns streamed through stdin (decisions=changed)"
/usr/bin/time -v bash -c "'$bin' synth --turns $big --seed 2 --out - | '$bin' replay - --out '$out/big' --decisions changed --quiet" 2> "$out/time.txt"
echo "  peak RSS of the pipeline's largest process: $(awk -F': ' '/Maximum resident set size/{printf "%.1f MB", $2/1024}' "$out/time.txt")"
echo "  turns replayed: $(grep -m1 '"turns"' "$out/big/summary.json")"
