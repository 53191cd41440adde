#!/usr/bin/env bash
# Replay benchmark: generate traffic with `synth`, then measure, in the same
# run, a parse-only pass (the floor: reading + JSON parsing) against a full
# replay (two variants, every report) on one pinned core, with one worker
# and with a worker per core (reader and writer threads unpinned), with
# peak memory from /usr/bin/time -v. A last step streams 10,000,000 turns
# through stdin to check that memory stays flat.
#
#   scripts/bench-replay.sh [TURNS=1000000] [BIG=10000000]
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-1000000}
big=${2:-10000000}
out=bench-out
mkdir -p "$out"
cargo build --release --quiet
bin=target/release/critic-gate
cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

if [ ! -f "$out/traffic-$turns.jsonl" ]; then
  "$bin" synth --turns "$turns" --seed 1 --out "$out/traffic-$turns.jsonl"
fi
file="$out/traffic-$turns.jsonl"
mb=$(awk "BEGIN{printf \"%.1f\", $(stat -c %s "$file")/1e6}")
echo "input: $turns turns, $mb MB ($(awk "BEGIN{printf \"%.0f\", $(stat -c %s "$file")/$turns}") bytes/turn)"

measure() { # label, command...
  local label=$1; shift
  /usr/bin/time -v "$@" 2> "$out/time.txt" > "$out/stdout.txt"
  local secs rss
  secs=$(grep 'Elapsed (wall clock)' "$out/time.txt" | awk -F': ' '{print $2}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(grep 'Maximum resident set size' "$out/time.txt" | awk -F': ' '{print $2}')
  printf '%-34s %8.2f s %12.0f turns/s %8.1f MB/s  peak %6.1f MB\n' "$label" "$secs" \
    "$(awk "BEGIN{print $turns/$secs}")" "$(awk "BEGIN{print $mb/$secs}")" "$(awk "BEGIN{print $rss/1024}")"
}

# One core: every thread (reader, worker, writer) pinned to CPU 0.
if command -v taskset >/dev/null; then
  measure "parse-only, 1 core" taskset -c 0 "$bin" parse-only "$file" --threads 1
  measure "replay (2 variants), 1 core" taskset -c 0 "$bin" replay "$file" --out "$out/replay" --threads 1 --quiet
fi
for t in 1 "$cores"; do
  measure "parse-only, $t worker(s)" "$bin" parse-only "$file" --threads "$t"
  measure "replay (2 variants), $t worker(s)" "$bin" replay "$file" --out "$out/replay" --threads "$t" --quiet
done

echo "memory check: $big turns streamed through stdin (decisions=changed)"
/usr/bin/time -v bash -c "'$bin' synth --turns $big --seed 2 --out - | '$bin' replay - --out '$out/big' --decisions changed --quiet" 2> "$out/time.txt"
echo "  peak RSS of the pipeline's largest process: $(awk -F': ' '/Maximum resident set size/{printf "%.1f MB", $2/1024}' "$out/time.txt")"
echo "  turns replayed: $(grep -m1 '"turns"' "$out/big/summary.json")"
