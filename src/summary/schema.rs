//! The data dictionary: every column of every CSV report, with its type,
//! unit, whether it may be empty (null), and what it means, declared once.
//! Each replay writes it as `schema.json`; the writers refuse a frame that
//! differs from it, and the tests load every committed report with it.
//!
//! A column's type never depends on the data: an empty table has the same
//! header and types as a full one, and a figure is empty (null) only where
//! the column says it may be.

use serde_json::{json, Value};

use crate::summary::metrics::VARIANT_COLUMNS;
pub(crate) use crate::summary::metrics::{col, opt, Column, Type, DECISION};

pub use super::metrics::SCHEMA_VERSION;

/// The files `diff` writes, by default into the new replay's folder.
pub const DIFF_FILES: [&str; 2] = ["flips.csv", "metrics_diff.csv"];

/// One report table: its file, what a row is, and its columns in order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    pub file: &'static str,
    /// The command that writes it: `replay`, or `diff` (into the new
    /// replay's folder by default).
    pub written_by: &'static str,
    pub row: &'static str,
    pub columns: &'static [Column],
}

/// A column of one run's table: its name and its declaration (a scope
/// key's column is declared by the `scope_KEY` template).
#[derive(Clone, Debug)]
pub(crate) struct RunColumn {
    pub name: String,
    pub decl: &'static Column,
}

impl Table {
    /// The table's columns in a run whose scope columns are `keys`: the
    /// `scope_KEY` template becomes one column per key, in order.
    pub(crate) fn columns_for(&'static self, keys: &[String]) -> Vec<RunColumn> {
        let mut out = Vec::new();
        for decl in self.columns {
            if decl.name == SCOPE_KEY_TEMPLATE {
                out.extend(keys.iter().map(|k| RunColumn {
                    name: crate::replay::scope_columns::ScopeColumns::column_name(k),
                    decl,
                }));
            } else {
                out.push(RunColumn {
                    name: decl.name.to_string(),
                    decl,
                });
            }
        }
        out
    }

    /// The CSV header line (without the newline).
    #[cfg(test)]
    pub(crate) fn header(&self) -> String {
        self.columns
            .iter()
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The table in `schema.json`: the run's own columns.
    pub(crate) fn schema_json(&'static self, keys: &[String]) -> Value {
        let columns: Vec<Value> = self
            .columns_for(keys)
            .iter()
            .map(|RunColumn { name, decl: c }| {
                json!({"name": name, "type": c.ty.name(), "unit": c.unit,
                       "nullable": c.nullable, "meaning": c.meaning})
            })
            .collect();
        json!({"written_by": self.written_by, "row": self.row, "columns": columns})
    }
}

use Type::*;

/// The name of the template column that stands for one column per scope
/// key (see [`Table::columns_for`]).
pub(crate) const SCOPE_KEY_TEMPLATE: &str = "scope_KEY";

const SCOPE_KEY: Column = opt(
    SCOPE_KEY_TEMPLATE,
    Str,
    "",
    "one column per scope key (scope_tenant for scope.tenant): the keys --scope-columns names, else those of the first 10,000 turns (at most 16, in order of first appearance); the key's value, a string as it is, other JSON as its text (cut at 256 bytes with …); empty where the scope lacks the key, holds null there, or is not an object",
);

/// Where a turn is in its source (decisions.csv, mismatches.csv).
const TRACE_ID: Column = opt(
    "trace_id",
    Str,
    "",
    "the trace the turn was recorded in, as the line's trace_id gives it (--from otlp: the turn's span's, lowercase hex); empty when not recorded; cut at 128 bytes with …",
);
const SPAN_ID: Column = opt(
    "span_id",
    Str,
    "",
    "the turn's span, as the line's span_id gives it (--from otlp: the symfonic.run span, or the skill-gate critic call's); empty when not recorded; cut at 128 bytes with …",
);
const MESSAGE_INDEX: Column = opt(
    "message_index",
    U64,
    "",
    "the turn's message in its transcript, as the line's message_index gives it (--from openai-chat: the assistant message's 0-based index in messages); empty when not recorded",
);

/// The first column of every table.
const RUN: Column = col("run", Str, "", "the run's label (--label; default: the output folder's name), to tell runs apart in joined or concatenated tables");

/// `run`, `variant`, then every figure of a variant ([`VARIANT_COLUMNS`]).
const SUMMARY: &[Column] = &concat::<{ 2 + VARIANT_COLUMNS.len() }>(
    &[
        RUN,
        col("variant", Str, "", "the variant's name (config order)"),
    ],
    VARIANT_COLUMNS,
);

/// `head` then `tail`, as one array of `N` columns (checked when the
/// crate is built).
const fn concat<const N: usize>(head: &[Column], tail: &[Column]) -> [Column; N] {
    assert!(head.len() + tail.len() == N);
    let mut out = [RUN; N];
    let mut i = 0;
    while i < head.len() {
        out[i] = head[i];
        i += 1;
    }
    let mut j = 0;
    while j < tail.len() {
        out[i + j] = tail[j];
        j += 1;
    }
    out
}

const SEGMENTS: &[Column] = &{
    let d = DECISION;
    [
        RUN,
        col("variant", Str, "", "the variant's name"),
        col("dimension", Str, "", "language, intent, draft_length, call_site, scope.KEY (or scope), or a --group-by path"),
        col("value", Str, "", "the dimension's value; (none) where a turn has none, (other) for values past the cap"),
        opt("value_order", U64, "", "the value's place in its dimension's natural order (draft_length buckets from 0 up); empty where values have none"),
        d[0],
        d[1],
        d[2],
        d[3],
        d[4],
        d[5],
        d[6],
        col("safety_regressions", U64, "turns", "as in summary.csv, for this segment: regressions on new skips"),
        col("new_skips", U64, "turns", "as in summary.csv, for this segment"),
        col("new_labelled_skips", U64, "turns", "as in summary.csv, for this segment"),
        col("critic_not_run", U64, "turns", "as in summary.csv, for this segment"),
        col("production_known", U64, "turns", "as in summary.csv, for this segment"),
        opt("production_agreement", F64, "share", "as in summary.csv, for this segment"),
        col("production_fired_variant_skips", U64, "turns", "as in summary.csv, for this segment"),
        col("production_skipped_variant_fires", U64, "turns", "as in summary.csv, for this segment"),
        opt("saved_tokens_in", U64, "tokens", "as in summary.csv, for this segment"),
        opt("saved_tokens_out", U64, "tokens", "as in summary.csv, for this segment"),
        opt("saved_latency_ms", U64, "ms", "as in summary.csv, for this segment"),
        opt("saved_usd", F64, "USD", "as in summary.csv, for this segment"),
        col("saved_calls_without_tokens", U64, "calls", "as in summary.csv, for this segment"),
        col("saved_calls_without_latency", U64, "calls", "as in summary.csv, for this segment"),
        opt("added_tokens_in_estimated", F64, "tokens", "as in summary.csv, for this segment: the same per-turn estimates, so a dimension's rows add up to the summary"),
        opt("added_tokens_out_estimated", F64, "tokens", "as in summary.csv, for this segment"),
        opt("added_latency_ms_estimated", U64, "ms", "as in summary.csv, for this segment"),
        opt("added_usd_estimated", F64, "USD", "as in summary.csv, for this segment"),
    ]
};

const FLOORS: &[Column] = &[
    RUN,
    col("variant", Str, "", "the variant's name"),
    col("gate", Str, "", "legacy or smart"),
    col("reason", Str, "", "a reason of that gate's trace"),
    col(
        "hard_floor",
        Bool,
        "",
        "whether the reason is a hard floor of the smart gate",
    ),
    col("hits", U64, "turns", "turns where the reason holds"),
    opt("share_of_turns", F64, "share", "hits / turns"),
    col(
        "sole_blocker",
        U64,
        "turns",
        "turns that would have been skipped had this reason alone not held",
    ),
];

const MATRIX: &[Column] = &[
    RUN,
    col("variant", Str, "", "the variant's name"),
    col(
        "baseline_decision",
        Str,
        "",
        "the baseline's decision: fire or skip",
    ),
    col(
        "variant_decision",
        Str,
        "",
        "the variant's decision: fire or skip",
    ),
    col("cell", Str, "", "both_fire, saved, added or both_skip"),
    col("turns", U64, "turns", "turns in the cell"),
    col(
        "labelled",
        U64,
        "turns",
        "with the verdict of a critic that ran",
    ),
    col(
        "unlabelled",
        U64,
        "turns",
        "without one (no event, no verdict, or no critic ran)",
    ),
    col(
        "critic_not_run",
        U64,
        "turns",
        "unlabelled turns whose event says no critic ran",
    ),
    col("approve", U64, "turns", "labelled approve"),
    col("revise", U64, "turns", "labelled revise"),
    col("refuse", U64, "turns", "labelled refuse"),
];

const REGRESSIONS: &[Column] = &[
    RUN,
    col("source", Str, "", "the traffic file, as given"),
    col("line", U64, "", "the line in that file (1-based)"),
    col("run_id", Str, "", "the recorded run_id, cut at 4 KiB (ending in …)"),
    opt(
        "turn",
        U64,
        "",
        "the recorded turn number; empty when not recorded",
    ),
    col("variant", Str, "", "the variant that skips the turn"),
    col("verdict", Str, "", "the recorded verdict: revise or refuse"),
    col(
        "kind",
        Str,
        "",
        "what the row is to the budgets: new_skip (a turn the baseline fires on: the regression budgets count it), shared_skip (the baseline skips it too: switching changes nothing; not counted), production_disagreement (a row of the baseline itself: production's critic revised or refused a turn it skips; not counted)",
    ),
    col(
        "draft",
        Str,
        "",
        "the draft that would have gone unreviewed",
    ),
    opt(
        "revised_draft",
        Str,
        "",
        "the critic's revision, when recorded",
    ),
    opt(
        "refusal_message",
        Str,
        "",
        "the critic's refusal, when recorded",
    ),
    col(
        "reasons",
        Str,
        "",
        "the variant's reasons for the skip, ;-separated",
    ),
    opt("language", Str, "", "the recorded language"),
    opt("intent", Str, "", "the recorded intent label"),
    opt(
        "scope",
        Str,
        "",
        "the recorded scope, as JSON (cut at 1,024 bytes with …)",
    ),
    SCOPE_KEY,
];

const SKIPS: &[Column] = &[
    RUN,
    col("variant", Str, "", "the variant's name"),
    col("draft", Str, "", "the draft as grouped: stripped, lowercased as Python lowers, whitespace collapsed, cut to 200 code points; (other) for the drafts past the top 1,000"),
    col("saved_calls", U64, "calls", "saved calls with this draft: the baseline fires, the variant skips"),
    col("languages", Str, "", "their recorded languages with counts, most first: en:12;es:3 ((none) without one)"),
    col("labelled", U64, "turns", "of these, with the verdict of a critic that ran"),
    col("approve", U64, "turns", "labelled approve"),
    col("revise", U64, "turns", "labelled revise (each a safety regression)"),
    col("refuse", U64, "turns", "labelled refuse (each a safety regression)"),
    opt("saved_usd", F64, "USD", "dollars of their recorded events; empty without prices or tokens"),
];

const DECISIONS: &[Column] = &[
    RUN,
    col("source", Str, "", "the traffic file, as given"),
    col("line", U64, "", "the line in that file (1-based)"),
    col("run_id", Str, "", "the recorded run_id, cut at 4 KiB (ending in …)"),
    opt(
        "turn",
        U64,
        "",
        "the recorded turn number; empty when not recorded",
    ),
    TRACE_ID,
    SPAN_ID,
    MESSAGE_INDEX,
    col("variant", Str, "", "the variant's name"),
    col("fires", Bool, "", "the variant's decision"),
    col("baseline_fires", Bool, "", "the baseline's decision"),
    col(
        "reasons",
        Str,
        "",
        "every reason of the decision trace, ;-separated",
    ),
    opt("language", Str, "", "the recorded language"),
    opt(
        "scope",
        Str,
        "",
        "the recorded scope, as JSON (cut at 1,024 bytes with …)",
    ),
    SCOPE_KEY,
    opt("intent", Str, "", "the recorded intent label"),
    col("draft_chars", U64, "code points", "the draft's length"),
    col(
        "confidence",
        F64,
        "share",
        "the resolved confidence (recorded, else from the activation log, else 0.5), written exactly: it is what is compared with the threshold",
    ),
    opt(
        "verdict",
        Str,
        "",
        "the verdict of a critic that ran: approve, revise or refuse",
    ),
    opt(
        "production",
        Str,
        "",
        "what production's gate did: fire or skip; empty when unknown",
    ),
    opt(
        "derived_signals",
        Str,
        "",
        "the turn's signals critic-gate derived (from the activation log, or from an imported transcript or trace as symfonic does), ;-separated: draft, tool_calls, intent, findings, confidence, sensitive, critic",
    ),
    opt(
        "unknown_signals",
        Str,
        "",
        "the turn's signals no record holds, ;-separated (each taken as the traffic format's default; summary.json's notes say with what effect)",
    ),
];

const MISMATCHES: &[Column] = &[
    RUN,
    col("source", Str, "", "the traffic file, as given"),
    col("line", U64, "", "the line in that file (1-based)"),
    col(
        "run_id",
        Str,
        "",
        "the recorded run_id, cut at 4 KiB (ending in …)",
    ),
    opt(
        "turn",
        U64,
        "",
        "the recorded turn number; empty when not recorded",
    ),
    TRACE_ID,
    SPAN_ID,
    MESSAGE_INDEX,
    col("call_site", Str, "", "turn or skill_gate"),
    col(
        "production",
        Str,
        "",
        "what production's gate did: fire or skip",
    ),
    col(
        "baseline_decision",
        Str,
        "",
        "what the baseline decides: fire or skip (as in matrix.csv)",
    ),
    col("reasons", Str, "", "the baseline's reasons, ;-separated"),
    col(
        "confidence",
        F64,
        "share",
        "the baseline's resolved confidence, written exactly",
    ),
    opt(
        "sensitive_hit",
        Str,
        "",
        "the baseline's sensitive hit, when any",
    ),
];

/// Every CSV report table, in the order of `schema.json`.
pub(crate) const TABLES: [Table; 8] = [
    Table {
        file: "summary.csv",
        written_by: "replay",
        row: "one row per variant",
        columns: SUMMARY,
    },
    Table {
        file: "segments.csv",
        written_by: "replay",
        row: "one row per variant, dimension and value",
        columns: SEGMENTS,
    },
    Table {
        file: "floors.csv",
        written_by: "replay",
        row: "one row per variant and reason of its gate",
        columns: FLOORS,
    },
    Table {
        file: "matrix.csv",
        written_by: "replay",
        row: "one row per variant and cell of baseline decision by variant decision",
        columns: MATRIX,
    },
    Table {
        file: "regressions.csv",
        written_by: "replay",
        row: "one row per safety regression (variant and turn)",
        columns: REGRESSIONS,
    },
    Table {
        file: "skips.csv",
        written_by: "replay",
        row: "one row per variant and skipped draft (its saved calls), most skipped first",
        columns: SKIPS,
    },
    Table {
        file: "decisions.csv",
        written_by: "replay",
        row: "one row per turn and variant (per --decisions)",
        columns: DECISIONS,
    },
    Table {
        file: "mismatches.csv",
        written_by: "replay",
        row: "one row per turn where the baseline decides otherwise than production did",
        columns: MISMATCHES,
    },
];

/// The table `sweep` writes beside the replay's.
pub(crate) const SWEEP_TABLES: [Table; 1] = [Table {
    file: "frontier.csv",
    written_by: "sweep",
    row: "one row per variant of the sweep (and of the config's [variants]), in config order",
    columns: FRONTIER,
}];

const FRONTIER: &[Column] = &[
    RUN,
    col("variant", Str, "", "the variant's name: a sweep variant is named by its values (sel=on/ro=search_docs/ack=builtin+1; a value with no short spelling by its place in the axis, ack=#2)"),
    col("baseline", Bool, "", "whether this variant is the baseline"),
    col("selective_gate", Bool, "", "metacognition_selective_gate"),
    opt("confidence_threshold", F64, "share", "metacognition_confidence_threshold; empty where the gate (flag on) does not look at it"),
    col("sensitive_tags", Str, "", "metacognition_sensitive_tags, as a JSON list"),
    opt("read_only_tools", Str, "", "read_only_tools, as a JSON list; empty where the gate (flag off) does not look at it"),
    opt("trivial_ack_patterns", Str, "", "metacognition_trivial_ack_patterns, as a JSON list ([] is the built-in set); empty where the gate (flag off) does not look at it"),
    opt("deployment", Str, "", "the deployment keys the variant runs with where they differ from [deployment] ([variants.NAME.deployment] or [sweep.deployment]), as a JSON object; empty where it runs with [deployment]"),
    col("savings_metric", Str, "", "what savings is: net_usd_per_1k_turns when every variant has dollars, else net_calls_per_1k_turns"),
    opt("savings", F64, "", "the variant's savings_metric; empty without turns"),
    opt("skip_rate", F64, "share", "as in summary.csv"),
    col("saved_calls", U64, "calls", "as in summary.csv"),
    col("added_calls", U64, "calls", "as in summary.csv"),
    opt("net_calls_per_1k_turns", F64, "calls", "as in summary.csv"),
    opt("net_usd_per_1k_turns", F64, "USD", "as in summary.csv"),
    col("safety_regressions", U64, "turns", "as in summary.csv"),
    col("new_skips", U64, "turns", "as in summary.csv"),
    opt("new_skip_rate", F64, "share", "new_skips / turns; empty without turns"),
    col("new_labelled_skips", U64, "turns", "as in summary.csv"),
    opt("safety_regression_rate_upper95", F64, "share", "as in summary.csv (run-level); empty without labelled new skips (the frontier then takes it as 1)"),
    opt("label_coverage", F64, "share", "as in summary.csv (of new skips)"),
    opt("harmful_skips_per_1k_turns", F64, "turns", "expected new harmful skips per 1,000 turns: safety_regressions / new_labelled_skips x new_skips / turns x 1,000 (0 for a variant without new skips, the baseline among them); empty with new skips but no labels"),
    col("harmful_skips_per_1k_turns_upper95", F64, "turns", "the same with the rate's run-level upper 95% bound (1 with new skips but no labels): what the labels say if they are missing at random"),
    opt("safety_regression_rate_worst_case_upper95", F64, "share", "as in summary.csv: the bound with every unlabelled new skip a regression; empty without new skips"),
    col("harmful_skips_per_1k_turns_worst_case_upper95", F64, "turns", "harmful_skips_per_1k_turns_upper95 or the same at the worst case's bound, the larger: the frontier's risk axis, which never draws a variant below what its labels alone support"),
    col("below_coverage_floor", Bool, "", "label_coverage (of new skips) is below 0.5: its bound rests more on the unlabelled new skips being like the labelled than on labels, so it is never on the frontier"),
    opt("production_agreement", F64, "share", "as in summary.csv"),
    col("on_frontier", Bool, "", "covered, and no other covered variant saves more with as few or fewer harmful skips per 1,000 turns (harmful_skips_per_1k_turns_worst_case_upper95), or as much with fewer"),
];

/// The tables `mine` writes.
pub(crate) const MINE_TABLES: [Table; 4] = [
    Table {
        file: "proposals.csv",
        written_by: "mine",
        row: "one row per language with a proposed ack pattern",
        columns: PROPOSALS,
    },
    Table {
        file: "missed.csv",
        written_by: "mine",
        row: "one row per language and normalised draft the mined variant fires on for want of an ack pattern",
        columns: MISSED,
    },
    Table {
        file: "risky_skips.csv",
        written_by: "mine",
        row: "one row per skip whose acks cover less than --max-ack-share of the draft, lowest share first",
        columns: RISKY,
    },
    Table {
        file: "risky_drafts.csv",
        written_by: "mine",
        row: "one row per distinct draft of the risky skips, most skips first",
        columns: RISKY_DRAFTS,
    },
];

/// The tables `plan` writes.
pub(crate) const PLAN_TABLES: [Table; 1] = [Table {
    file: "plan.csv",
    written_by: "plan",
    row: "one row per stratum of production's skips, then the pooled row (`stratum` = `(all)`)",
    columns: PLAN,
}];

const PLAN: &[Column] = &[
    col("stratum", Str, "", "the stratum's value (`--strata`), (none) without one; (all) for the pooled row"),
    col("turns", U64, "turns", "turns of the stratum in the traffic the plan was made on"),
    col("skips", U64, "turns", "of them, the turns production's gate skips"),
    col("skips_per_day", F64, "turns", "skips / the days the traffic spans"),
    col("labelled", U64, "turns", "skips with the verdict of a critic that ran (traffic recorded under the legacy gate labels exactly these turns): the prior"),
    col("regressions", U64, "turns", "of them, revised or refused"),
    opt("prior", F64, "share", "the one-sided 50% Clopper-Pearson upper bound of regressions / labelled (never 0 on a few labels): the rate the power is computed at; empty without labels"),
    opt("labels_to_certify", U64, "turns", "labelled skips that certify the rate within R at the confidence when none is a regression (the exact one-sided Clopper-Pearson bound); empty past 2^53"),
    opt("labels_for_power", U64, "turns", "labelled skips from which on the bound comes out within R with 80% probability at the prior; empty without a prior, at a prior at or above R, or past ten million"),
    col("probability", F64, "share", "the inclusion probability of a skip of the stratum: the target labels (labels_for_power, else labels_to_certify) over the skips the window holds, at most 1 (rounded up to nine significant digits); a stratum with no skip takes the highest of the others' (as does a value the plan has not seen); for the pooled row, calls_per_day / skips_per_day"),
    col("calls_per_day", F64, "calls", "expected shadow critic calls a day: probability x skips_per_day"),
    col("chart_labels_per_day", F64, "labels", "of calls_per_day, the expected labels a day the change alarm takes: one per conversation a day (the first drawn of its skips by coin key), so that a derailing conversation is one observation; from how the stratum's skips gather in conversations a day in the traffic (learnt from a hash sample of at most 65,536 conversation-days, exact below it); equal to calls_per_day where every conversation has one skip a day"),
    opt("usd_per_day", F64, "USD", "calls_per_day x the mean dollars of a recorded critic call on production's skips (the calls the sample will make are like them), or of every recorded call where none ran on a skip (plan.md says which); empty without a priced call in the traffic"),
    opt("days_to_certify", F64, "days", "labels_to_certify / calls_per_day: the days until a sample with no regression certifies R; empty without calls"),
    opt("days_for_power", F64, "days", "labels_for_power / calls_per_day; empty where labels_for_power is"),
    opt("days_to_certify_anytime", F64, "days", "the whole days until `monitor`'s anytime bound (valid at every daily look) certifies R when no label is a regression, at these volumes and probabilities (the pooled row: its joint bound over the plan's probabilities); it asks more labels than one look's bound (days_to_certify); empty where a stratum is drawn at 0 or past ten years"),
    opt("days_to_detect_2r", F64, "days", "the median days a change alarm on the stratum's labels (one per conversation a day) fires once its rate is 2R, from a calm start: a Bernoulli CUSUM for a doubling of R (whole units) whose average run length at R is false_alarm_every_days x the strata with calls of chart_labels_per_day (so the strata's charts together false-alarm about once in false_alarm_every_days; `monitor` runs them), its run length from the chart's exact Markov chain; empty without calls, and on the pooled row with several strata"),
    opt("days_to_detect_3r", F64, "days", "the same once the rate is 3R; empty also where 3R is not below 1"),
];

/// The tables `monitor` writes.
pub(crate) const MONITOR_TABLES: [Table; 1] = [Table {
    file: "monitor.csv",
    written_by: "monitor",
    row: "one row per period and stratum of production's skips, the pooled row (`stratum` = `all`) after each period's strata",
    columns: MONITOR,
}];

const MONITOR: &[Column] = &[
    col("period", Str, "", "the period: a day of the turns' ts (YYYY-MM-DD, as recorded), an ISO week (YYYY-Www) or a release's first day (--release-at; `(before DATE)` for turns before the first)"),
    col("stratum", Str, "", "the plan's stratum; `all` for the pooled row"),
    col("turns", U64, "turns", "turns of the period (and stratum)"),
    col("fires", U64, "turns", "of them, those production's gate fires on"),
    col("skips", U64, "turns", "of them, those production's gate skips: the population the plan samples"),
    col("sampled", U64, "turns", "skips the plan's coin drew"),
    col("labelled", U64, "turns", "drawn skips with a verdict: `labelled_shadow` + `labelled_production`"),
    col("labelled_shadow", U64, "turns", "of them, a shadow critic's (the traffic's `sampled_label`)"),
    col("labelled_production", U64, "turns", "of them, production's own critic's (an exploration gate's fire)"),
    col("failed", U64, "turns", "drawn skips whose shadow call failed"),
    col("regressions", U64, "turns", "labelled skips revised or refused"),
    opt("unplanned", U64, "turns", "shadow labels of this plan on turns it did not draw (not used); on the pooled row only"),
    opt("other_plan", U64, "turns", "shadow labels of another plan (not used); on the pooled row only"),
    opt("estimate", F64, "share", "the period's Horvitz-Thompson estimate of the regression rate of production's skips; empty without a skip, or where a probability group drew skips and got no verdict"),
    opt("harmful_per_1k_estimate", F64, "per 1,000 turns", "estimate x skips x 1000 / turns"),
    opt("window_upper95", F64, "share", "the period's own upper bound (at the plan's confidence; exact hypergeometric, summed over probabilities at alpha / groups): valid for one look at this period alone"),
    opt("worst_case_upper95", F64, "share", "the same, each drawn skip without a verdict counted a regression"),
    col("cumulative_skips", U64, "turns", "production's skips from the first period to this one"),
    col("cumulative_labelled", U64, "turns", "their labelled draws"),
    col("cumulative_regressions", U64, "turns", "of them, revised or refused"),
    col("cumulative_failed", U64, "turns", "drawn skips of all those whose shadow call failed (an `error` line); the worst-case bounds count each against the budget"),
    opt("cumulative_estimate", F64, "share", "the Horvitz-Thompson estimate of the regression rate of all those skips"),
    opt("anytime_upper95", F64, "share", "an upper bound on the realised regression rate of all those skips that holds at every look at once, at the plan's confidence: per inclusion probability an exact mixture martingale on the coin's draws (failed calls taken as unrelated to the verdict), summed at alpha / the plan's probabilities"),
    opt("anytime_lower95", F64, "share", "the matching lower bound: above R is evidence the rate exceeds the budget"),
    opt("anytime_worst_case_upper95", F64, "share", "anytime_upper95 with each drawn skip without a verdict counted a regression: it holds however failures relate to verdicts; the status reads it unless failed calls are assumed missing at random"),
    opt("anytime_worst_case_lower95", F64, "share", "the matching lower bound with each drawn skip without a verdict counted an approval, at the full probability; the status reads it unless failed calls are assumed missing at random"),
    opt("cusum", F64, "share", "the change alarm's score at the period's end as a share of its threshold (the pooled row: the highest of the strata's charts); empty without a chart"),
    col("alarm", Bool, "", "true from the period a change alarm fired (a Bernoulli CUSUM for a rise from R to 2R per stratum, as plan.toml designed it)"),
    opt("change_began", Str, "", "the period the alarmed chart's rise most likely began (its first label after its score was last 0)"),
    col("status", Str, "", "`alarm`, `above` (the deciding lower bound above R), `certified` (the deciding upper bound at or below R) or `too_few_labels`, in that order; the deciding bounds are `decided_by`'s"),
    col("decided_by", Str, "", "which anytime bounds the status read: `worst_case` (anytime_worst_case_upper95 and _lower95, the default) or `missing_at_random` (anytime_upper95 and anytime_lower95, when --assume-missing-at-random or `[monitor] assume_missing_at_random = true` asked for it)"),
    col("since", Str, "", "the period the status has held since"),
    opt("labels_needed", U64, "turns", "on the last period's rows under too_few_labels (what a daily run reports): about how many more labels certify R if the traffic goes on as so far at the current estimate; empty otherwise, without an estimate below R, or past ten million"),
    opt("fidelity_pairs", U64, "turns", "the plan's fidelity sample (plan --fidelity-share; pooled rows only): production's reviewed fires of the period the coin drew that the shadow critic also reviewed"),
    opt("fidelity_disagreement", F64, "share", "over all periods so far, the share of those pairs where one critic intervened (revise or refuse) and the other approved"),
    opt("fidelity_disagreement_lower95", F64, "share", "an anytime lower bound on that share among all production's reviewed fires so far (as anytime_lower95); above --max-fidelity-gap monitor warns that the shadow critic's verdicts may not be production's"),
    opt("fidelity_disagreement_upper95", F64, "share", "the matching anytime upper bound"),
];

const RISKY_DRAFTS: &[Column] = &[
    RUN,
    col("draft", Str, "", "the draft as recorded"),
    col("skips", U64, "turns", "its risky skips"),
    col("labelled", U64, "turns", "of them, with the verdict of a critic that ran"),
    col("safety_regressions", U64, "turns", "of them, revised or refused"),
    col("ack_share", F64, "share", "letters and digits covered by every match of every ack pattern / letters and digits of the lowered, stripped draft, function and courtesy words left out"),
    col("matched", Str, "", "the matched texts, joined by \" + \""),
];

const PROPOSALS: &[Column] = &[
    RUN,
    col(
        "language",
        Str,
        "",
        "the recorded language, else a script in parentheses ((han), (cyrillic), ...)",
    ),
    col(
        "pattern",
        Str,
        "",
        "the proposed Python pattern (matched case-insensitively, as the built-ins)",
    ),
    col("phrases", Str, "", "its phrases, ;-separated"),
    col("support", U64, "turns", "missed turns its phrases occur in"),
    col(
        "new_skips",
        U64,
        "turns",
        "turns the mined variant fires on and the variant with the pattern added skips",
    ),
    opt(
        "saved_usd",
        F64,
        "USD",
        "their recorded critic dollars; empty without prices or tokens",
    ),
    col(
        "new_labelled_skips",
        U64,
        "turns",
        "new skips with the verdict of a critic that ran",
    ),
    col(
        "new_safety_regressions",
        U64,
        "turns",
        "new skips the critic revised or refused",
    ),
    opt(
        "label_coverage",
        F64,
        "share",
        "new_labelled_skips / new_skips (the floor is 0.5); empty without new skips",
    ),
    col(
        "labelled_runs",
        U64,
        "runs",
        "runs with a labelled new skip: the bound's sampling units",
    ),
    opt(
        "new_regression_rate_upper95",
        F64,
        "share",
        "one-sided 95% upper bound of their rate, runs as the sampling unit (as summary.csv's safety_regression_rate_upper95); empty without labels",
    ),
    opt(
        "p_value",
        F64,
        "share",
        "the run-level p-value of \"its rate is at or above the budget\"; Holm's step-down over every tested pattern (mine.json's family) decides on it; empty without labels or budget",
    ),
    col(
        "status",
        Str,
        "",
        "proposed (its new skips reach --min-labelled labels and the coverage floor 0.5, Holm's step-down at 0.05 over every tested pattern shows its rate within the budget: --max-regression-rate, else the mined variant's own bound, and the proposed patterns together pass on their own new skips: mine.json's bundle), or held back (left out of proposals.toml)",
    ),
    col("why", Str, "", "the evidence for a proposal, or why it is held back"),
];

const MISSED: &[Column] = &[
    RUN,
    col("language", Str, "", "as in proposals.csv"),
    col(
        "draft",
        Str,
        "",
        "the draft lowercased, punctuation and emoji stripped, whitespace collapsed",
    ),
    col("turns", U64, "turns", "missed turns with this draft"),
    col(
        "usd",
        F64,
        "USD",
        "their recorded critic dollars (0 without prices)",
    ),
    col(
        "covered",
        Bool,
        "",
        "a proposed (not held back) pattern matches it",
    ),
];

const RISKY: &[Column] = &[
    RUN,
    col("source", Str, "", "the input file"),
    col("line", U64, "", "1-based line in source"),
    col("run_id", Str, "", "the recorded run id"),
    opt("turn", U64, "", "the recorded turn number"),
    col("ack_share", F64, "share", "letters and digits covered by every match of every ack pattern / letters and digits of the lowered, stripped draft, function and courtesy words left out"),
    col("matched", Str, "", "the matched texts, joined by \" + \""),
    col("draft", Str, "", "the draft as recorded"),
    opt("verdict", Str, "", "the verdict of a critic that ran"),
    col("labelled", Bool, "", "the turn has that verdict"),
];

/// The tables `diff` writes: the turns whose decision flipped and every
/// metric side by side. `run` is the new replay's label.
pub(crate) const DIFF_TABLES: [Table; 2] = [
    Table {
        file: "flips.csv",
        written_by: "diff",
        row: "one row per turn and variant whose decision differs between the two replays",
        columns: FLIPS,
    },
    Table {
        file: "metrics_diff.csv",
        written_by: "diff",
        row: "one row per variant and summary metric",
        columns: METRICS_DIFF,
    },
];

const OLD_RUN: Column = col("old_run", Str, "", "the old replay's label");

const FLIPS: &[Column] = &[
    col("run", Str, "", "the new replay's label"),
    OLD_RUN,
    col("variant", Str, "", "the variant's name"),
    col("run_id", Str, "", "the recorded run id"),
    opt("turn", U64, "", "the recorded turn number"),
    col(
        "source",
        Str,
        "",
        "the input file (as the new replay names it)",
    ),
    col(
        "line",
        U64,
        "",
        "1-based line in source: with source, the turn's key in both replays",
    ),
    col(
        "old_fires",
        Bool,
        "",
        "whether the variant fired in the old replay",
    ),
    col("new_fires", Bool, "", "whether it fires in the new one"),
    col(
        "old_reasons",
        Str,
        "",
        "the old decision's reasons, ;-separated",
    ),
    col(
        "new_reasons",
        Str,
        "",
        "the new decision's reasons, ;-separated",
    ),
    opt(
        "verdict",
        Str,
        "",
        "the recorded critic verdict, when a critic ran",
    ),
    col(
        "new_safety_regression",
        Bool,
        "",
        "the new replay skips a turn the critic revised or refused, and the old did not",
    ),
];

const METRICS_DIFF: &[Column] = &[
    col("run", Str, "", "the new replay's label"),
    OLD_RUN,
    col("variant", Str, "", "the variant's name"),
    col(
        "metric",
        Str,
        "",
        "a column of summary.csv (booleans as 0 and 1)",
    ),
    opt(
        "old",
        F64,
        "",
        "the metric in the old replay, a real number for every metric (a count of 3 reads 3.0: one column holds counts and rates alike, and loads as one type); empty where undefined",
    ),
    opt(
        "new",
        F64,
        "",
        "the metric in the new replay, a real number as `old` is; empty where undefined",
    ),
    opt(
        "delta",
        F64,
        "",
        "new - old, 9 significant digits; empty where either is",
    ),
];

/// The table written as `file`.
pub(crate) fn table(file: &str) -> &'static Table {
    every_table()
        .find(|t| t.file == file)
        .unwrap_or_else(|| panic!("{file} has no declared schema"))
}

/// Every command's tables, by the command that writes them.
const GROUPS: [(&str, &[Table]); 6] = [
    ("replay", &TABLES),
    ("sweep", &SWEEP_TABLES),
    ("mine", &MINE_TABLES),
    ("diff", &DIFF_TABLES),
    ("plan", &PLAN_TABLES),
    ("monitor", &MONITOR_TABLES),
];

/// Every declared table.
fn every_table() -> impl Iterator<Item = &'static Table> {
    GROUPS.iter().flat_map(|(_, t)| t.iter())
}

/// `schema.json`: the version and every table, with the run's scope
/// columns.
pub(crate) fn to_json(keys: &[String]) -> Value {
    let tables: serde_json::Map<String, Value> = every_table()
        .map(|t| (t.file.to_string(), t.schema_json(keys)))
        .collect();
    json!({"schema_version": SCHEMA_VERSION, "tables": tables})
}

/// `docs/reports.md`: every table of every command, column by column, as
/// declared here (a test holds the file to this text; regenerate it with
/// `CRITIC_GATE_BLESS=1 cargo test --release docs_reports_md`).
pub fn reference_markdown() -> String {
    use std::fmt::Write as _;
    let mut out = String::from(
        "# Reports reference\n\n\
         Generated from the schema declaration (`src/summary/schema.rs`) by a\n\
         test: do not edit by hand. Every table is written as CSV, Parquet or\n\
         both (`--format`); `schema.json` in each report folder says the same,\n\
         with the run's own scope columns.\n\n\
         Types: `u64` a count (never negative), `i64` a whole number that may\n\
         be negative, `f64` a real number, `string`, `bool`. A column marked\n\
         nullable is empty only where its value is undefined (a rate with no\n\
         denominator, a price that was not set), never 0 in its place.\n",
    );
    let _ = writeln!(out, "\nSchema version: {SCHEMA_VERSION}.");
    for (v, what) in super::metrics::SCHEMA_CHANGES {
        let _ = writeln!(out, "\n- Version {v}: {what}.");
    }
    for (command, tables) in GROUPS {
        let _ = writeln!(out, "\n## Written by `{command}`");
        for t in tables {
            let _ = writeln!(out, "\n### {}\n\n{}.\n", t.file, t.row);
            out.push_str("| column | type | unit | nullable | meaning |\n|---|---|---|---|---|\n");
            for c in t.columns {
                let cell = |x: &str| x.replace('|', "\\|");
                let _ = writeln!(
                    out,
                    "| `{}` | {} | {} | {} | {} |",
                    c.name,
                    c.ty.name(),
                    cell(c.unit),
                    if c.nullable { "yes" } else { "no" },
                    cell(c.meaning)
                );
            }
        }
    }
    out.push_str("\n## Segment dimensions\n\nsegments.csv's `dimension`, beside `scope` / `scope.KEY` and `--group-by` paths:\n\n| dimension | values |\n|---|---|\n");
    for d in crate::replay::BUILTIN {
        let _ = writeln!(out, "| `{}` | {} |", d.name, d.meaning.replace('|', "\\|"));
    }
    out.push_str("\n## Matrix cells\n\nmatrix.csv's `cell`, per variant against the baseline:\n\n| cell | meaning |\n|---|---|\n");
    for c in crate::replay::MatrixCell::ALL {
        let _ = writeln!(
            out,
            "| `{}` | {} |",
            c.name(),
            c.meaning().replace('|', "\\|")
        );
    }
    out.push_str(
        "\n## Warnings\n\nsummary.json's `warnings` counts these by kind, with the first lines\n\
         of each (`FILE:LINE`); the replay's summary on stderr lists them too.\n\n\
         | kind | meaning |\n|---|---|\n",
    );
    for k in crate::replay::WARNING_KINDS {
        let _ = writeln!(
            out,
            "| `{}` | {} |",
            k.name(),
            k.meaning().replace('|', "\\|")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/reports.md is the declaration, printed: a column added, renamed
    /// or explained differently fails here until the file is regenerated.
    /// The columns that name the declared values name every one of them.
    #[test]
    fn value_columns_name_every_declared_value() {
        let meaning = |file: &str, col: &str| {
            table(file)
                .columns
                .iter()
                .find(|c| c.name == col)
                .unwrap()
                .meaning
        };
        for d in crate::replay::BUILTIN {
            assert!(
                meaning("segments.csv", "dimension").contains(d.name),
                "{}",
                d.name
            );
        }
        for c in crate::replay::MatrixCell::ALL {
            assert!(
                meaning("matrix.csv", "cell").contains(c.name()),
                "{}",
                c.name()
            );
        }
    }

    #[test]
    fn docs_reports_md_is_generated_from_the_schema() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reports.md");
        let want = reference_markdown();
        if std::env::var_os("CRITIC_GATE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "docs/reports.md differs from the schema; regenerate it with CRITIC_GATE_BLESS=1 cargo test --release docs_reports_md"
        );
        for t in every_table() {
            assert!(got.contains(&format!("### {}\n", t.file)), "{}", t.file);
        }
    }

    #[test]
    fn streamed_headers_are_the_declared_ones() {
        use crate::replay::rows::{header, MISMATCH_HEADER};
        use crate::replay::scope_columns::ScopeColumns;
        let names = |t: &'static Table, keys: &[String]| -> String {
            let cols: Vec<String> = t.columns_for(keys).into_iter().map(|c| c.name).collect();
            cols.join(",")
        };
        let keys = ["tenant".to_string(), "a,b".to_string()];
        let cols = ScopeColumns::named(&keys).unwrap();
        let want = names(table("decisions.csv"), &keys).replace("scope_a,b", "\"scope_a,b\"");
        assert_eq!(header(&cols).trim_end(), want);
        assert!(
            want.contains(",scope,scope_tenant,\"scope_a,b\",intent,"),
            "{want}"
        );
        assert_eq!(
            header(&ScopeColumns::default()).trim_end(),
            names(table("decisions.csv"), &[])
        );
        assert_eq!(MISMATCH_HEADER.trim_end(), table("mismatches.csv").header());
    }

    #[test]
    fn names_are_unique_within_a_table() {
        for t in TABLES
            .iter()
            .chain(SWEEP_TABLES.iter())
            .chain(DIFF_TABLES.iter())
        {
            let mut names: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), t.columns.len(), "{}", t.file);
        }
    }
}
