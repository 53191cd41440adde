//! The replay: read -> evaluate every variant -> tally, block by block.
//!
//! Blocks are parsed and evaluated in parallel (rayon) and their results
//! merged strictly in input order, so every output is byte-identical for
//! any thread count. Per-turn work is one parse, one set of draft features
//! shared by every variant, and one gate evaluation per variant.

pub(crate) mod design;
mod hash;
pub(crate) mod options;
pub(crate) mod ordered;
pub(crate) mod probe;
pub(crate) mod rows;
pub(crate) mod scope_columns;
pub(crate) mod segments;
pub(crate) mod skips;
mod step;
pub(crate) mod tally;
mod totals;

pub(crate) use crate::read::reader::{is_blank, without_bom};
pub use options::{DecisionsMode, Format, Input, Outputs, ReplayOptions, Tallies};
pub use segments::validate_group_by;
pub(crate) use segments::BUILTIN;
pub(crate) use segments::{
    add_absent_scope_rows, cap_segments, DRAFT_LENGTH, MAX_SCOPE_DIMENSIONS,
};
pub(crate) use step::{BlockResult, Regression, Reject, TOP_REGRESSIONS};
pub(crate) use tally::MatrixCell;
pub(crate) use totals::{DuplicateCheck, Totals, WarningKind, Warnings, WARNING_KINDS};

use serde_json::Value;

use crate::config::FrameworkConfig;
use crate::gate::{DraftFeatures, Gate, Reason};
use crate::import::Decoder;
use crate::read::provenance::Signal;
use crate::read::reader::{self, Block, Converted, Imported, Source};
use crate::read::turn::{CallSite, Intent, SensitiveField, ToolCall, Turn};
use hash::turn_key;
use scope_columns::{Scan, ScopeColumns};
use segments::{
    block_segments, path_value, recorded, DIM_CALL_SITE, DIM_INTENT, DIM_LANGUAGE, NONE,
};
use step::{count, legacy_reference, At, Decision, Look, Scratch, TurnFacts};
use tally::{label_index, length_bucket_index, EventFacts, VariantTally};
use totals::slot;

/// A compiled replay: one gate per variant. It holds what a replay reads,
/// its plan and what it tallies, and the rows' label; no output choice
/// (format, folder, frontier files) reaches it.
pub(crate) struct Replayer {
    pub input: options::Input,
    pub plan: crate::config::Plan,
    pub tallies: options::Tallies,
    /// The `run` column of the rows it renders.
    pub label: String,
    gates: Vec<Gate>,
    /// Per variant: the flag-off config to check the contract against.
    legacy_check: Vec<Option<FrameworkConfig>>,
    /// The scope keys made columns (named, or found by
    /// [`Replayer::use_scan`] before the first block).
    pub scope_columns: ScopeColumns,
    /// What the default scope-column scan saw (empty when named).
    pub scan: Scan,
    /// How the input's blocks become traffic (`--from`).
    pub decoder: Decoder,
    /// Per variant, the deployment it runs with: its place in
    /// [`crate::config::Plan::deployments`] (0: `[deployment]`), which a
    /// converted turn is read under.
    deployment_of: Vec<usize>,
    /// The variant a plan's population is made of (None without a plan),
    /// found once.
    design_variant: Option<usize>,
    /// Settings tried on production's variant's fires without a critic
    /// event ([`probe`]).
    probe: probe::Probe,
    /// The plan is an audit: its draws count for every variant that
    /// skips the audited turns too.
    audit: bool,
}

/// Every variant's gate, each pattern list compiled once. A pattern that
/// does not compile is named with a variant whose gate uses ack patterns
/// (the flag on) when one shares the list: a top-level list is not the
/// legacy variant's fault.
pub(crate) fn compile_gates(plan: &crate::config::Plan) -> crate::Result<Vec<Gate>> {
    let mut cache = crate::gate::PatternCache::default();
    let vs = &plan.variants;
    vs.iter()
        .map(|v| {
            Gate::new_cached(v.config.clone(), &mut cache).map_err(|e| {
                let user = vs
                    .iter()
                    .find(|u| {
                        u.config.metacognition_selective_gate
                            && u.config.metacognition_trivial_ack_patterns
                                == v.config.metacognition_trivial_ack_patterns
                    })
                    .unwrap_or(v);
                crate::Error::Config(crate::config::ConfigError::value(format!(
                    "variant {}: {e}",
                    user.name
                )))
            })
        })
        .collect()
}

impl Replayer {
    pub(crate) fn new(opts: &ReplayOptions) -> crate::Result<Replayer> {
        let gates = compile_gates(&opts.plan)?;
        let probe =
            probe::Probe::of(&gates[opts.plan.production()]).map_err(crate::Error::Config)?;
        let (_, deployment_of) = opts.plan.deployments();
        match opts.input.from {
            crate::import::InputFormat::Traffic => opts.plan.derived_once()?,
            crate::import::InputFormat::OpenaiChat | crate::import::InputFormat::Otlp => {}
        }
        let legacy_check = opts
            .plan
            .variants
            .iter()
            .map(|v| (!v.config.metacognition_selective_gate).then(|| v.config.clone()))
            .collect();
        let scope_columns = match &opts.tallies.scope_columns {
            Some(keys) => ScopeColumns::named(keys)?,
            None => ScopeColumns::default(),
        };
        let decoder = Replayer::decoder_of(opts);
        let design_variant = opts
            .tallies
            .design
            .as_ref()
            .and_then(|d| opts.plan.variants.iter().position(|v| v.name == d.variant));
        let audit = opts
            .tallies
            .design
            .as_ref()
            .is_some_and(|d| d.population == design::Population::UnlabelledNewSkips);
        // The plan drew its sample from turns as [deployment] derived them.
        if let Some(v) = design_variant {
            let drawn: Vec<usize> = [Some(v), audit.then_some(opts.plan.baseline)]
                .into_iter()
                .flatten()
                .collect();
            opts.plan
                .one_deployment(&drawn, "a plan's sample")
                .map_err(crate::Error::Config)?;
        }
        Ok(Replayer {
            input: opts.input.clone(),
            plan: opts.plan.clone(),
            tallies: opts.tallies.clone(),
            label: opts.rows_label().to_string(),
            gates,
            legacy_check,
            scope_columns,
            scan: Scan::default(),
            decoder,
            deployment_of,
            design_variant,
            audit,
            probe,
        })
    }

    /// Unless `--scope-columns` named them, the scope columns are those
    /// `scan` (of the input's first blocks) finds; the scan is kept for a
    /// partial result.
    pub(crate) fn use_scan(&mut self, scan: Option<Scan>) {
        if let (None, Some(scan)) = (&self.tallies.scope_columns, scan) {
            self.scope_columns = ScopeColumns::found(&[&scan]);
            self.scan = scan;
        }
    }

    /// How many further deployments a converted turn carries (0 when
    /// every variant runs with `[deployment]`).
    fn further(&self) -> usize {
        self.decoder.alternates.len()
    }

    /// How a replay's input is read.
    pub(crate) fn decoder_of(opts: &ReplayOptions) -> Decoder {
        let (mut deployments, _) = opts.plan.deployments();
        let base = deployments.remove(0);
        Decoder {
            alternates: deployments.into(),
            ..Decoder::new(
                opts.input.from,
                base,
                opts.input.sources.clone().into(),
                opts.input.max_line_bytes,
            )
        }
    }

    /// The sources of a replay, as the reader reads them.
    pub(crate) fn sources_of(opts: &ReplayOptions) -> Vec<Source> {
        opts.input
            .sources
            .iter()
            .map(|s| Source {
                name: s.clone(),
                bytes: opts.input.source_bytes.clone(),
            })
            .collect()
    }

    pub(crate) fn empty_totals(&self) -> Totals {
        Totals::new(self.gates.len())
    }

    /// Parse, evaluate and tally one block (converted into traffic first,
    /// when the input is in another format).
    pub(crate) fn process(&self, block: &Block) -> BlockResult {
        let converted = self.decoder.convert(block);
        let block = converted.as_ref().unwrap_or(block);
        let mut out = BlockResult {
            totals: self.empty_totals(),
            ..Default::default()
        };
        out.totals.bytes = block.bytes().len() as u64;
        // Reserve for a row of about 140 bytes per variant per line of
        // about 500 bytes, rather than grow (and copy) the rows several times
        // (only touched pages count as memory).
        let every_row = match self.tallies.decisions {
            DecisionsMode::All => true,
            DecisionsMode::Changed | DecisionsMode::None => false,
        };
        if every_row {
            out.decisions_csv
                .reserve(block.bytes().len() / 500 * self.gates.len() * 140);
        }
        let mut scratch = Scratch::new(self.gates.len());
        if let Some(bytes) = block.overlong {
            out.totals.nonblank_lines += 1;
            out.totals.rejected += 1;
            out.rejects
                .push(self.overlong(block.source, block.first_line, bytes, block.bytes()));
            return out;
        }
        if let Some(imported) = &block.imported {
            note_import(block.source, imported, &mut out);
        }
        // A converted line may be longer than the input line it came from:
        // the limit is the input's.
        let max_line_bytes = match block.imported {
            Some(_) => usize::MAX,
            None => self.input.max_line_bytes,
        };
        // Converted turns come as values (and the block then has no lines).
        for (line, c) in block.turns() {
            out.totals.nonblank_lines += 1;
            let at = At {
                source: block.source,
                line,
            };
            self.tally_turn(c.turn(), LineOf::Converted(c), at, &mut out, &mut scratch);
        }
        for (line_no, raw) in reader::lines(block) {
            let raw = without_bom(line_no, raw);
            if is_blank(raw) {
                continue;
            }
            out.totals.nonblank_lines += 1;
            let at = At {
                source: block.source,
                line: line_no,
            };
            self.line(at, raw, max_line_bytes, &mut out, &mut scratch);
        }
        if self.tallies.detail {
            out.totals.scope_overflow = scratch.segments.scope_overflow;
            for (dim, n) in scratch.segments.folded() {
                *out.totals
                    .segments_capped
                    .entry(dim.to_string())
                    .or_default() += n;
            }
            out.totals.segments = block_segments(scratch.segments, &out.totals.variants);
        }
        for v in &mut out.totals.variants {
            v.latency.settle();
        }
        out
    }

    /// One non-blank line: rejected (too long, not UTF-8, not a valid
    /// turn) or replayed.
    #[inline]
    fn line(
        &self,
        at: At,
        raw: &[u8],
        max_line_bytes: usize,
        out: &mut BlockResult,
        scratch: &mut Scratch,
    ) {
        if raw.len() > max_line_bytes {
            out.totals.rejected += 1;
            out.rejects
                .push(self.overlong(at.source, at.line, raw.len() as u64, raw));
            return;
        }
        let reject = |reason: crate::options::Said| Reject {
            source: at.source,
            line: at.line,
            reason,
            raw: String::from_utf8_lossy(raw).into_owned(),
            raw_base64: None,
        };
        let text = match std::str::from_utf8(raw) {
            Ok(t) => t,
            Err(e) => {
                out.totals.rejected += 1;
                out.rejects.push(Reject {
                    // The exact bytes, since the text cannot hold them.
                    raw_base64: Some(rows::base64(raw)),
                    ..reject(format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()).into())
                });
                return;
            }
        };
        // Borrowed from the result, not moved out of it (a turn is a few
        // hundred bytes; the copy showed in profiles).
        let parsed = Turn::parse(text);
        match &parsed {
            Ok(turn) => self.tally_turn(turn, LineOf::Text(text), at, out, scratch),
            Err(e) => {
                out.totals.rejected += 1;
                let reason = crate::import::InputFormat::hint(e.to_string(), text);
                out.rejects.push(reject(reason));
            }
        }
    }

    /// The reject of a line longer than `--max-line-bytes`: its first
    /// bytes only.
    fn overlong(&self, source: usize, line: u64, bytes: u64, raw: &[u8]) -> Reject {
        // The first bytes, cut at a character boundary; `…` when cut.
        let mut prefix = &raw[..raw.len().min(reader::OVERLONG_PREFIX)];
        if let Err(e) = std::str::from_utf8(prefix) {
            if e.error_len().is_none() {
                prefix = &prefix[..e.valid_up_to()];
            }
        }
        let cut = (prefix.len() as u64) < bytes;
        Reject {
            source,
            line,
            reason: reader::overlong_reason(bytes, self.input.max_line_bytes),
            raw: String::from_utf8_lossy(prefix).into_owned() + if cut { "…" } else { "" },
            raw_base64: None,
        }
    }

    /// One valid turn of this run: warnings, evaluation, and every tally it
    /// feeds.
    fn tally_turn(
        &self,
        turn: &Turn<'_>,
        text: LineOf,
        at: At,
        out: &mut BlockResult,
        scratch: &mut Scratch,
    ) {
        if self.input.split.is_some_and(|s| !s.keeps(&turn.run_id)) {
            // The other half's turn (`calibrate`): not read by this run,
            // its line not counted either.
            out.totals.nonblank_lines -= 1;
            return;
        }
        self.note_turn(turn, at, out);
        let seen = Seen::of(turn, text, self.further());
        let (facts, facts_under) = self.facts_seen(&seen, at, &mut out.totals);
        // The baseline first (every decision is compared with it), then
        // each variant in order; no per-turn list of evaluations.
        let b = self.plan.baseline;
        let (base_turn, base_features) = seen.by(self.deployment_of[b]);
        let base = self.gates[b].evaluate_with(base_turn, base_features);
        let base_fires = base.fires();
        scratch.counts.clear();
        scratch.fields_set = None;
        scratch.skip_key = None;
        let sampled = self.design_variant;
        // An audit's turn, counted again for each other variant that
        // skips it (it is one of their unlabelled new skips too).
        let mut counted = None;
        scratch.skipping.clear();
        for (i, gate) in self.gates.iter().enumerate() {
            let k = self.deployment_of[i];
            let (turn, features) = seen.by(k);
            let other;
            let eval = if i == b {
                &base
            } else {
                other = gate.evaluate_with(turn, features);
                &other
            };
            let d = Decision::of(i, eval, base_fires);
            if i == self.plan.production() {
                self.probe_fire(&d, turn, features, &mut out.totals);
            }
            if Some(i) == sampled {
                counted = self.tally_design(turn, &d, &mut out.totals);
            } else if self.audit && d.skips() && i != b {
                scratch.skipping.push(i);
            }
            // Only a smart gate's skip is an ack (its share is worked out
            // once per draft and pattern list).
            let risky = d.skips()
                && eval.selective
                && gate
                    .ack_share(features)
                    .is_some_and(|s| s < self.tallies.max_ack_share);
            let facts = k
                .checked_sub(1)
                .and_then(|k| facts_under.get(k))
                .unwrap_or(&facts);
            let look = Look {
                turn,
                facts,
                eval,
                d,
                risky,
            };
            self.variant_step(&look, out, scratch);
        }
        if let Some(c) = counted {
            self.tally_overlap(&c, &scratch.skipping, &mut out.totals);
        }
        if self.tallies.detail {
            self.segment(&seen, text, &facts, scratch);
        }
    }

    /// Production's variant's decision, for [`probe`].
    fn probe_fire(
        &self,
        d: &Decision,
        turn: &Turn,
        features: &DraftFeatures,
        t: &mut totals::Totals,
    ) {
        let fired = d.fires.then(|| probe::Fired {
            first: d.reasons.iter().next().unwrap_or(Reason::LowConfidence),
            empty: features.chars == 0,
        });
        self.probe.add(&mut t.probe, turn, fired, Some(features));
    }

    /// [`Replayer::facts`] of a turn as seen, with whether production
    /// explored it, and its facts under each further deployment (pooled).
    fn facts_seen(
        &self,
        seen: &Seen,
        at: At,
        totals: &mut totals::Totals,
    ) -> (TurnFacts, Vec<TurnFacts>) {
        let mut facts = self.facts(seen.turn, at, seen.features.chars as u64, totals);
        facts.explored = self.explored(seen, &facts);
        let under = seen.facts_under(&facts);
        if !under.is_empty() {
            self.pool_under(&under, totals);
        }
        (facts, under)
    }

    /// Whether production's critic ran on the turn because the plan's coin
    /// drew it from its gate's skips (the exploration gate). Worked out
    /// only where production fired and a plan of its skips is given.
    fn explored(&self, seen: &Seen, facts: &TurnFacts) -> bool {
        let (Some(design), Some(s)) = (self.tallies.design.as_ref(), self.design_variant) else {
            return false;
        };
        if design.population != design::Population::ProductionSkips
            || facts.production != Some(true)
        {
            return false;
        }
        let (turn, features) = seen.by(self.deployment_of[s]);
        // Matched by symfonic's run id only, and only where the coin drew
        // a share of the skips (at probability 1 a gate that reviews every
        // skip looks the same).
        let at = design.place(turn);
        turn.turn_id.is_some()
            && at.drawn
            && at.probability < 1.0
            && !self.gates[s].evaluate_with(turn, features).fires()
    }

    /// A turn against the plan's sample, by the sampled variant's decision;
    /// what it added when it is one of the population.
    fn tally_design(
        &self,
        turn: &Turn<'_>,
        d: &Decision,
        totals: &mut totals::Totals,
    ) -> Option<design::Counted> {
        let design = self.tallies.design.as_ref()?;
        let member = design
            .population
            .holds(d.skips(), d.base_fires, turn.verdict().is_some());
        totals
            .design
            .get_or_insert_with(|| design::DesignTally::new(design))
            .add_counted(design, turn, member)
    }

    /// An audited turn, counted for each other variant in `skipping`.
    fn tally_overlap(&self, c: &design::Counted, skipping: &[usize], totals: &mut totals::Totals) {
        let Some(tally) = totals.design.as_mut() else {
            return;
        };
        for &i in skipping {
            tally.add_overlap(&self.plan.variants[i].name, c);
        }
    }

    /// One variant's decision: counted, tallied, kept as a regression, and
    /// written as rows.
    fn variant_step(&self, look: &Look, out: &mut BlockResult, scratch: &mut Scratch) {
        let c = count(&look.d, look.facts, look.risky);
        let vt = &mut out.totals.variants[look.d.variant];
        self.tally_variant(look, vt);
        // Only a new skip needs its run (most turns are none).
        if c.new_skips > 0 {
            let r = vt.runs.entry(hash::run_key(&look.turn.run_id)).or_default();
            r.new_skips += 1;
            r.labelled += c.new_labelled_skips;
            r.regressions += c.new_safety_regressions;
            r.risky_labelled += c.risky_labelled_skips;
            r.risky_regressions += c.risky_safety_regressions;
        }
        vt.counts.merge(&c);
        scratch.counts.push(c);
        if look.is_regression() && self.tallies.detail {
            self.write_regression(look, out);
        }
        if look.d.base_fires && !look.d.fires && self.tallies.detail {
            self.note_skip(look, out, scratch);
        }
        self.write_decision(look, out, scratch);
        if look.d.variant == self.plan.baseline {
            self.write_mismatch(look, out);
        }
    }

    /// A saved call, under its normalised draft (worked out once a turn).
    fn note_skip(&self, look: &Look, out: &mut BlockResult, scratch: &mut Scratch) {
        let turn = look.turn;
        // Worked out again only when variants of another deployment
        // (another draft) come between.
        let k = self.deployment_of[look.d.variant];
        if scratch.skip_key.as_ref().is_none_or(|(at, _)| *at != k) {
            scratch.skip_key = Some((k, skips::normalise(&turn.draft)));
        }
        let key = &scratch.skip_key.as_ref().expect("set above").1;
        let skip = skips::Skip {
            language: turn.language.as_deref(),
            verdict: look.facts.label,
            event: look.facts.event.as_ref(),
        };
        skips::add(&mut out.totals.skips[look.d.variant], key, &skip);
    }

    /// Counts, warnings and keys of a valid turn that do not depend on the
    /// variants.
    fn note_turn(&self, turn: &Turn<'_>, at: At, out: &mut BlockResult) {
        let t = &mut out.totals;
        t.turns += 1;
        t.unknown_fields += turn.unknown_fields as u64;
        let w = &mut t.warnings;
        // A call with no `name` key, or not an object at all (a plain
        // string): the gate counts it as mutating, which a recorder may not
        // expect.
        if turn
            .tool_calls
            .iter()
            .any(|c| matches!(c, ToolCall::NoName { .. } | ToolCall::NotObject))
        {
            w.add(WarningKind::ToolCallWithoutName, at.source, at.line);
        }
        if turn.source_id_unreadable {
            w.add(WarningKind::SourceIdUnreadable, at.source, at.line);
        }
        if turn.label_unreadable {
            w.add(WarningKind::LabelUnreadable, at.source, at.line);
        }
        if let Intent::Label(l) = &turn.intent {
            if !matches!(l.as_ref(), "action" | "knowledge" | "ambiguous") {
                w.add(WarningKind::UnknownIntentLabel, at.source, at.line);
            }
        }
        if turn.misnamed.is_some() {
            w.add(WarningKind::MisnamedField, at.source, at.line);
        }
        if matches!(&turn.sensitive_hit, SensitiveField::Hit(s) if s.is_empty()) {
            w.add(WarningKind::EmptySensitiveHit, at.source, at.line);
        }
        if turn.critic_not_run() {
            w.add(WarningKind::CriticNotRun, at.source, at.line);
        }
        for (key, meant) in turn.misnamed.iter().flat_map(|m| m.iter()) {
            t.note_misnamed(key, meant);
        }
        if let Some(n) = turn.turn {
            out.keys
                .push((turn_key(&turn.run_id, n), at.source, at.line));
        }
        for k in &turn.fabrication_kinds {
            *slot(&mut t.fabrication_kinds, k, || 0) += 1;
        }
    }

    /// What the turn's recording says, priced: the same for every variant.
    fn facts(&self, turn: &Turn<'_>, at: At, draft_chars: u64, t: &mut Totals) -> TurnFacts {
        let review = turn.review();
        let tokens = review.and_then(|c| c.tokens_in.zip(c.tokens_out));
        let latency_ms = review.and_then(|c| c.latency_ms);
        let model = review.and_then(|c| c.model.as_deref());
        let nano_usd = match tokens.map(|tk| self.plan.cost.nano_usd(tk, model)) {
            Some(Ok(n)) => Some(n),
            Some(Err(name)) => {
                t.note_unpriced(name);
                None
            }
            None => None,
        };
        let event = review.map(|_| EventFacts {
            tokens,
            latency_ms,
            nano_usd,
        });
        if let Some(ev) = &event {
            let b = length_bucket_index(draft_chars);
            t.events_by_length[b].add(ev);
            if let Some(ms) = ev.latency_ms {
                t.latency_by_length[b].add(ms);
            }
        }
        let signals = turn.signals();
        for s in Signal::ALL {
            t.provenance[s as usize][signals.get(s) as usize] += 1;
        }
        TurnFacts {
            signals,
            at,
            label: turn.verdict(),
            label_index: label_index(turn),
            event,
            latency_ms,
            production: turn.production().fired(),
            explored: false,
            call_site: turn.call_site(),
            draft_chars,
        }
    }

    /// A recorded critic event, bucketed again by the length of the draft
    /// each further deployment derived (`under`: the turn's facts under
    /// each; what its variants' added calls are estimated from).
    fn pool_under(&self, under: &[TurnFacts], t: &mut Totals) {
        // The recording's event, the same under every deployment.
        let Some(ev) = under.first().and_then(|f| f.event.as_ref()) else {
            return;
        };
        if t.by_length_under.len() < under.len() {
            t.by_length_under.resize_with(under.len(), Default::default);
        }
        for (f, pools) in under.iter().zip(&mut t.by_length_under) {
            let b = length_bucket_index(f.draft_chars);
            pools.events[b].add(ev);
            if let Some(ms) = ev.latency_ms {
                pools.latency[b].add(ms);
            }
        }
    }

    /// A variant's tallies that are not [`Counts`]: the contract check,
    /// reasons, the matrix, latency and disagreements with production.
    fn tally_variant(&self, look: &Look, vt: &mut VariantTally) {
        let (turn, d, f) = (look.turn, &look.d, look.facts);
        if let Some(cfg) = &self.legacy_check[d.variant] {
            if d.fires != legacy_reference(turn, cfg) {
                vt.contract_violations += 1;
            }
        }
        for r in d.reasons.iter() {
            vt.reason_hits[r as usize] += 1;
        }
        if let Some(r) = d.reasons.single() {
            if r != Reason::TrivialAck && r != Reason::Confident {
                vt.sole_blocker[r as usize] += 1;
            }
        }
        vt.matrix[d.base_fires as usize][d.fires as usize][f.label_index] += 1;
        // Latency added to a user-facing turn: 0 on a skip, the recorded
        // latency on a fire (fires without one are counted apart).
        // Skill-gate calls are not a user's wait.
        if f.call_site == CallSite::Turn {
            match (d.fires, f.latency_ms) {
                (false, _) => vt.latency.add(0.0),
                (true, Some(l)) => {
                    vt.latency.add(l);
                    vt.latency_measured_fires += 1
                }
                (true, None) => {
                    vt.latency_unmeasured_fires += 1;
                    vt.unmeasured_fires_by_length[length_bucket_index(f.draft_chars)] += 1;
                }
            }
        }
        if let Some(m) = d.mismatch(f.gate()) {
            let first = d.reasons.iter().next().unwrap_or(Reason::Confident);
            vt.mismatch_reasons[m as usize][first as usize] += 1;
        }
    }

    /// The variant's row of decisions.csv, when kept.
    fn write_decision(&self, look: &Look, out: &mut BlockResult, scratch: &mut Scratch) {
        let (turn, e, d, f) = (look.turn, look.eval, &look.d, look.facts);
        let keep = match self.tallies.decisions {
            DecisionsMode::All => true,
            DecisionsMode::Changed => d.fires != d.base_fires,
            DecisionsMode::None => false,
        };
        if !keep {
            return;
        }
        let row = crate::replay::rows::Row {
            run: &self.label,
            source: &self.input.sources[f.at.source],
            line: f.at.line,
            run_id: &turn.run_id,
            turn: turn.turn,
            ids: crate::replay::rows::SourceIds::of(turn),
            variant: &self.plan.variants[d.variant].name,
            fires: d.fires,
            baseline_fires: d.base_fires,
            reasons: d.reasons,
            language: turn.language.as_deref(),
            scope: turn.scope.as_deref(),
            intent: turn.intent_label(),
            draft_chars: f.draft_chars,
            confidence: e.confidence,
            verdict: f.label,
            production: f.production,
            signals: f.signals,
        };
        let k = self.deployment_of[d.variant];
        if scratch.fields_set != Some(k) {
            scratch.fields.set(&row, &self.scope_columns);
            scratch.fields_set = Some(k);
        }
        scratch.fields.write(&mut out.decisions_csv, &row);
    }

    /// A regression's row of regressions.csv; the first few are kept
    /// whole for report.md.
    fn write_regression(&self, look: &Look, out: &mut BlockResult) {
        let g = Regression::of(look, &self.scope_columns);
        g.write_row(
            &mut out.regressions_csv,
            &self.label,
            &self.input.sources[g.source],
            &self.plan.variants[g.variant].name,
            g.kind(self.plan.baseline).as_str(),
        );
        out.totals.listed_regressions += 1;
        if out.regressions.len() < TOP_REGRESSIONS {
            out.regressions.push(g);
        }
    }

    /// The baseline's row of mismatches.csv, when it disagrees with
    /// production.
    fn write_mismatch(&self, look: &Look, out: &mut BlockResult) {
        let (turn, e, d, f) = (look.turn, look.eval, &look.d, look.facts);
        let Some(production_fired) = f.gate().filter(|&p| p != d.fires) else {
            return;
        };
        crate::replay::rows::MismatchRow {
            run: &self.label,
            source: &self.input.sources[f.at.source],
            line: f.at.line,
            run_id: &turn.run_id,
            turn: turn.turn,
            ids: crate::replay::rows::SourceIds::of(turn),
            call_site: f.call_site.as_str(),
            production_fired,
            baseline_fires: d.fires,
            reasons: d.reasons,
            confidence: e.confidence,
            sensitive_hit: e.sensitive_hit,
        }
        .write(&mut out.mismatches_csv);
    }

    /// Add the turn's per-variant counts to each of its segments.
    fn segment(&self, seen: &Seen, text: LineOf, f: &TurnFacts, scratch: &mut Scratch) {
        let turn = seen.turn;
        self.segment_by_deployment(seen, f, scratch);
        let counts = &scratch.counts;
        let seg = &mut scratch.segments;
        let language = turn.language.as_deref().map(recorded);
        seg.add(DIM_LANGUAGE, language.as_deref().unwrap_or(NONE), counts);
        // Nearly every turn is a user-facing `turn`: only skill-gate calls
        // are added here, and the `turn` row is the block's totals less
        // them (see `block_segments`), exact and one lookup less a turn.
        if f.call_site != CallSite::Turn {
            seg.add(DIM_CALL_SITE, f.call_site.as_str(), counts);
        }
        if let Some(raw) = turn.scope.as_deref() {
            seg.add_scope(raw, counts);
        }
        if !self.tallies.group_by.is_empty() {
            let whole = text.json();
            for path in &self.tallies.group_by {
                let dim = seg.dim(path);
                seg.add(dim, &path_value(&whole, path), counts);
            }
        }
    }
}

impl Replayer {
    /// The segments a deployment derives (intent, draft length), each
    /// with the counts of the variants that run with it (with one
    /// deployment, every variant's): a variant's rows are those of a
    /// replay under its deployment.
    fn segment_by_deployment(&self, seen: &Seen, f: &TurnFacts, scratch: &mut Scratch) {
        let Scratch {
            counts, segments, ..
        } = scratch;
        if self.further() == 0 {
            let intent = seen.turn.intent_label().map(recorded);
            segments.add(DIM_INTENT, intent.as_deref().unwrap_or(NONE), counts);
            segments.add_length(f.draft_chars, counts);
            return;
        }
        for k in (0..=self.further()).filter(|k| self.deployment_of.contains(k)) {
            let mine: Vec<tally::Counts> = counts
                .iter()
                .zip(&self.deployment_of)
                .map(|(c, &of)| {
                    if of == k {
                        c.clone()
                    } else {
                        Default::default()
                    }
                })
                .collect();
            let (turn, features) = seen.by(k);
            let intent = turn.intent_label().map(recorded);
            segments.add(DIM_INTENT, intent.as_deref().unwrap_or(NONE), &mine);
            segments.add_length(features.chars as u64, &mine);
        }
    }
}

/// The traffic line a turn was read from, or the converted turn that
/// stands for one: `--group-by` reads any field of the line.
#[derive(Clone, Copy)]
enum LineOf<'a> {
    Text(&'a str),
    Converted(&'a dyn Converted),
}

/// A turn as each variant reads it: with variants of several
/// deployments, a converted turn as each deployment derived it (with its
/// draft's features, worked out once per deployment); else as read.
struct Seen<'a, 't> {
    turn: &'a Turn<'t>,
    features: DraftFeatures<'a>,
    converted: Option<&'a dyn Converted>,
    /// The draft's features under each further deployment.
    alternates: Vec<DraftFeatures<'a>>,
}

impl<'a, 't> Seen<'a, 't> {
    /// `further`: how many further deployments a converted turn carries
    /// (0 when every variant runs with `[deployment]`).
    fn of(turn: &'a Turn<'t>, text: LineOf<'a>, further: usize) -> Seen<'a, 't> {
        let converted = match text {
            LineOf::Converted(c) if further > 0 => Some(c),
            _ => None,
        };
        let alternates = converted.map_or_else(Vec::new, |c| {
            (1..=further)
                .map(|k| DraftFeatures::of(&c.under(k).draft))
                .collect()
        });
        Seen {
            turn,
            features: DraftFeatures::of(&turn.draft),
            converted,
            alternates,
        }
    }

    /// The facts of the turn under each further deployment (its draft and
    /// signals; the recording is the turn's), once a turn.
    fn facts_under(&self, facts: &TurnFacts) -> Vec<TurnFacts> {
        (1..=self.alternates.len())
            .map(|k| {
                let (turn, features) = self.by(k);
                facts.under(turn, features)
            })
            .collect()
    }

    /// The turn as deployment `k` derived it, with its draft's features.
    fn by(&self, k: usize) -> (&Turn<'t>, &DraftFeatures<'a>) {
        match self.converted {
            Some(c) if k > 0 => (c.under(k), &self.alternates[k - 1]),
            _ => (self.turn, &self.features),
        }
    }
}

impl LineOf<'_> {
    fn json(self) -> Value {
        let parsed = match self {
            LineOf::Text(t) => serde_json::from_str(t),
            LineOf::Converted(c) => serde_json::from_str(&c.line()),
        };
        parsed.unwrap_or(Value::Null)
    }
}

/// A converted block's input lines that could not be converted (rejects,
/// each a non-blank line of the input) and what the conversion counted.
fn note_import(source: usize, imported: &Imported, out: &mut BlockResult) {
    for f in &imported.failed {
        out.totals.nonblank_lines += 1;
        out.totals.rejected += 1;
        let text = std::str::from_utf8(&f.raw);
        out.rejects.push(Reject {
            source,
            line: f.line,
            reason: f.reason.clone(),
            raw: String::from_utf8_lossy(&f.raw).into_owned(),
            // The exact bytes, when the text cannot hold them.
            raw_base64: text.is_err().then(|| rows::base64(&f.raw)),
        });
    }
    for (name, n) in &imported.counts {
        *out.totals
            .import_counts
            .entry(name.to_string())
            .or_default() += n;
    }
    out.totals
        .trace_keys
        .extend(imported.trace_keys.iter().cloned());
}
