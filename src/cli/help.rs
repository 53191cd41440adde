//! What `--help` adds after each command's options: an example or two,
//! the exit codes, and where the reference is. The docs live in the
//! repository's `docs/` folder (a clone has them; an installed binary
//! names them by path).

/// Exit codes of every command that decides nothing.
macro_rules! done {
    () => {
        "Exit codes: 0 done; 2 could not do it (an invalid line FILE:LINE, a bad config, an unreadable file, a refused output path)."
    };
}

/// The top-level help's closing lines.
pub const TOP: &str = "\
First steps:
  critic-gate init                         # write critic-gate.toml, commented
  critic-gate replay traffic.jsonl --config critic-gate.toml --out reports/first
  critic-gate check reports/first --config critic-gate.toml

Exit codes: 0 success; 1 a budget failed (check, diff --fail-on-new-regressions); 2 the tool could not do its job.
Reference: README.md and docs/ in the critic-gate repository (docs/traffic-format.md: the input).";

pub const REPLAY: &str = concat!(
    "Examples:
  critic-gate replay traffic.jsonl --config gate.toml --out reports/first
  critic-gate replay traces/*.otlp.jsonl.gz --from otlp --config gate.toml --out reports/traces
  zcat big.jsonl.gz | critic-gate replay - --out reports/big --skip-invalid

",
    done!(),
    "
Reference: docs/traffic-format.md (the input), docs/reading-reports.md, docs/reports.md (every column)."
);

pub const SWEEP: &str = concat!(
    "Example:
  critic-gate sweep traffic.jsonl --config sweep.toml --out reports/sweep   # sweep.toml has a [sweep] grid

",
    done!(),
    "
Reference: docs/sweeps.md."
);

pub const CALIBRATE: &str = concat!(
    "Example:
  critic-gate calibrate traffic.jsonl --config sweep.toml --max-regression-rate 0.02 --out reports/cal

",
    done!(),
    " Certifying no variant is a result (exit 0, calibrated.toml keeps the baseline).
Reference: docs/sweeps.md (the guarantee, stated exactly)."
);

pub const MINE: &str = concat!(
    "Example:
  critic-gate mine traffic.jsonl --config gate.toml --out reports/mine --stress

",
    done!(),
    " Proposing nothing is a result (exit 0; mine says why).
Reference: docs/sweeps.md."
);

pub const CHECK: &str = "\
Examples:
  critic-gate check reports/first --max-safety-regressions 0 --min-turns 1000
  critic-gate check reports/first --config gate.toml --markdown verdict.md   # budgets from [check]

Exit codes: 0 every budget passes; 1 a budget fails; 2 cannot judge (no budget given, a folder that is not a replay's or is damaged).
Reference: docs/ci.md.";

pub const DIFF: &str = "\
Example:
  critic-gate diff reports/release reports/candidate --fail-on-new-regressions

Exit codes: 0 compared; 1 new safety regressions with --fail-on-new-regressions; 2 cannot compare (different traffic, a damaged folder).
Reference: docs/ci.md, docs/reports.md (flips.csv, metrics_diff.csv).";

pub const EXPLAIN: &str = concat!(
    "Examples:
  critic-gate explain '{\"run_id\":\"r\",\"draft\":\"Got it, thanks!\"}'
  critic-gate explain turn.json --config gate.toml --json

",
    done!(),
    "
Reference: docs/gate-semantics.md."
);

pub const DERIVE: &str = concat!(
    "Example:
  echo '{\"user_message\": \"send the report\", \"draft\": \"I sent it.\"}' | critic-gate derive -

",
    done!(),
    "
Reference: docs/importing.md."
);

pub const IMPORT: &str = concat!(
    "Example:
  critic-gate import transcripts.jsonl --from openai-chat --config gate.toml --out traffic.jsonl

",
    done!(),
    "
Reference: docs/import-formats.md, docs/importing.md."
);

pub const MERGE: &str = concat!(
    "Example:
  critic-gate merge shards/*.partial --out reports/2026-11

",
    done!(),
    "
Reference: docs/shards-python-ray.md."
);

pub const SYNTH: &str = concat!(
    "Example:
  critic-gate synth --turns 100000 --seed 7 --out synthetic.jsonl.zst

",
    done!(),
    "
Reference: docs/datasets.md (the mixes)."
);

pub const INIT: &str = concat!(
    "Examples:
  critic-gate init                 # writes critic-gate.toml
  critic-gate init - | less        # prints it

",
    done!(),
    "
Reference: docs/config.md."
);

pub const PATTERNS: &str = concat!(
    "Examples:
  critic-gate patterns                        # the built-ins, ready to paste
  critic-gate patterns --config gate.toml     # what each variant matches

",
    done!(),
    "
Reference: docs/gate-semantics.md, docs/config.md."
);
