//! `merge`: the reports of one replay over every shard's files, in the
//! order given, from the shards' partial results. Byte for byte what one
//! replay writes: rows are copied (relabelled when the labels differ),
//! tallies are merged in order, the duplicate check is repeated over every
//! shard's keys, and the caps are applied once, at the end.

use std::borrow::Cow;
use std::path::Path;

use super::{Merged, Outcome, ReportFacts};
use crate::replay::rows::field;
use crate::replay::scope_columns::ScopeColumns;
use crate::replay::segments::{MAX_SEGMENT_CELLS, MAX_TRACKED_VALUES};
use crate::replay::Format;
use crate::replay::Warnings;
use crate::report::{self, Staging, Streams};
use crate::summary::build::SourceFacts;
use crate::summary::partial::{Frame, Header, PartialInput, PartialReader, Spec, State};
use crate::Error;

/// What `merge` is asked to do.
pub struct MergeOptions {
    /// The partial results, in the order of their shards.
    pub inputs: Vec<PartialInput>,
    /// The run's label (the `run` column).
    pub label: String,
    pub format: Format,
    pub force: bool,
}

/// Merge `o.inputs` into the reports in `out`. The partial results must
/// agree on everything but their sources; on any error nothing is
/// written.
pub fn merge(o: MergeOptions, out: &Path) -> crate::Result<Outcome> {
    if o.inputs.is_empty() {
        return Err(Error::Usage(
            "merge: give at least one partial result".into(),
        ));
    }
    let headers = o
        .inputs
        .iter()
        .map(read_header)
        .collect::<crate::Result<Vec<_>>>()?;
    each_file_once(&o.inputs)?;
    let spec = agreed_spec(&o.inputs, &headers)?;
    let scope = merged_scope(&spec, &headers)?;
    let sources = headers.iter().flat_map(|h| h.sources.clone()).collect();
    let mut opts = spec.options(sources, o.label, o.format);
    opts.outputs.force = o.force;
    report::check_out_dir(out, &opts.input.sources, opts.outputs.force)?;
    let staging = Staging::create(out)?;
    let job = Job {
        opts: &opts,
        scope: &scope,
        staging: &staging,
    };
    match job.run(&o.inputs, &headers) {
        Ok(outcome) => {
            staging.commit(report::report_files())?;
            Ok(outcome)
        }
        Err(e) => {
            staging.abandon();
            Err(e)
        }
    }
}

/// The header, the first frame (the rest is read when the shard is merged).
fn read_header(input: &PartialInput) -> crate::Result<Header> {
    if let PartialInput::File(p) = input {
        if p.metadata().is_ok_and(|m| !m.is_file()) {
            return Err(Error::usage(format!(
                "{}: not a regular file (a folder, a pipe or a device): merge reads each partial result twice, its header first; give the file",
                p.display()
            )));
        }
    }
    let mut r = PartialReader::open(input)?;
    match r.next()? {
        // Tallies and rows are this version's: another's may differ in
        // what they mean, with nothing to show it.
        Frame::Header(h) if h.tool != env!("CARGO_PKG_VERSION") => Err(Error::usage(format!(
            "{}: written by critic-gate {}, this is critic-gate {}: replay the shard with this version (or merge with the version that wrote it)",
            r.name,
            h.tool,
            env!("CARGO_PKG_VERSION")
        ))),
        Frame::Header(h) => match h.spec.plan.validate() {
            Ok(()) => Ok(*h),
            Err(why) => Err(Error::Read(
                format!("{}: damaged partial result: {why}", r.name).into(),
            )),
        },
        _ => Err(Error::Read(format!(
            "{}: damaged partial result: it does not open with its header",
            r.name
        ).into())),
    }
}

/// One partial result file named twice (`merge a.partial a.partial`, or
/// two globs that overlap) would add each of its turns twice: refused.
/// (Two partials of one traffic file, replayed twice, merge as one replay
/// of the file given twice does: with duplicate-turn warnings.)
fn each_file_once(inputs: &[PartialInput]) -> crate::Result<()> {
    let mut seen = std::collections::HashMap::new();
    for input in inputs {
        let PartialInput::File(p) = input else {
            continue;
        };
        let at = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if let Some(first) = seen.insert(at, input.name()) {
            return Err(Error::usage(format!(
                "{}: given twice (also as {first}): its turns would count twice; give each partial result once",
                input.name()
            )));
        }
    }
    Ok(())
}

/// The spec every partial result was replayed with (the first's; any
/// other that differs is an error naming what differs).
fn agreed_spec(inputs: &[PartialInput], headers: &[Header]) -> crate::Result<Spec> {
    let first = &headers[0].spec;
    if first.flags_read_back().is_none() {
        return Err(Error::Read(crate::Failure::new(crate::said![
            format!(
                "{}: damaged partial result: its options {:?} are not ones this build takes; replay the shard again with ",
                inputs[0].name(),
                first.flags
            ),
            crate::options::Setting::Partial
        ])));
    }
    for (input, h) in inputs.iter().zip(headers).skip(1) {
        if let Some(what) = first.difference(&h.spec) {
            return Err(Error::usage(crate::said![
                format!(
                    "{}: replayed with other settings than {} (",
                    input.name(),
                    inputs[0].name()
                ),
                what,
                format!(
                    " differ; fingerprints {} and {}): replay every shard with the same config and options",
                    h.spec.fingerprint(),
                    first.fingerprint()
                )
            ]));
        }
    }
    Ok(first.clone())
}

/// The scope columns of one replay over every shard's files: named, or
/// found from the shards' scans in order (as one replay's scan reads them).
fn merged_scope(spec: &Spec, headers: &[Header]) -> crate::Result<ScopeColumns> {
    match &spec.scope_columns {
        Some(keys) => ScopeColumns::named(keys),
        None => Ok(ScopeColumns::found(
            &headers.iter().map(|h| &h.scan).collect::<Vec<_>>(),
        )),
    }
}

/// The merge of the partial results into one staging folder.
struct Job<'a> {
    opts: &'a crate::replay::ReplayOptions,
    scope: &'a ScopeColumns,
    staging: &'a Staging,
}

/// Where a shard's sources, rows and label sit in the merged run.
struct Shard<'a> {
    name: String,
    /// Its first source's index in the merged run.
    offset: usize,
    sources: &'a [String],
    /// `label,` as the shard's rows begin, and as the merged rows do.
    old_prefix: Vec<u8>,
    new_prefix: &'a [u8],
    /// The scope columns of the shard's rows, and the merged run's.
    scope: &'a ScopeColumns,
    merged_scope: &'a ScopeColumns,
}

impl Job<'_> {
    fn run(&self, inputs: &[PartialInput], headers: &[Header]) -> crate::Result<Outcome> {
        let mut streams = Streams::open(Some(self.staging), self.opts, self.scope)?;
        let mut merged = Merged::new(&self.opts.input.sources, self.opts.plan.variants.len());
        let mut dups = Warnings::default();
        let mut notes = Vec::new();
        let new_prefix = label_prefix(&self.opts.outputs.label);
        let mut offset = 0;
        // The shards' largest counts so far, added: within 2^64 - 1 no sum
        // of one count over the shards can wrap.
        let mut counted: u128 = 0;
        for (input, h) in inputs.iter().zip(headers) {
            let shard = Shard {
                name: input.name(),
                offset,
                sources: &h.sources,
                old_prefix: label_prefix(&h.label),
                new_prefix: &new_prefix,
                scope: &h.scope,
                merged_scope: self.scope,
            };
            // The rows a shard may bring, from its tallies, before one is
            // written: a shard of more is refused when it passes them.
            let limit = RowCounts::allowed(&PartialReader::tallies_of(input)?.totals, self.opts);
            let (state, rows) = shard.stream(input, limit, &mut streams, &mut merged, &mut dups)?;
            counted += u128::from(crate::summary::partial::largest_count(&state.totals));
            if counted > u128::from(u64::MAX) {
                return Err(shard.damaged(
                    "its counts, added to the earlier shards', pass 2^64 - 1, so a sum would wrap (no replay counts so much)",
                ));
            }
            if self.opts.tallies.detail {
                shard.regressions_agree(&state.totals)?;
            }
            shard.rows_fit_tallies(rows, &state.totals, self.opts)?;
            notes.extend(shard.absorb(state, &mut merged, inputs.len())?);
            offset += h.sources.len();
        }
        streams.finish()?;
        merged.totals.warnings.merge(&dups);
        let facts = ReportFacts {
            opts: self.opts,
            scope: self.scope,
            notes,
            from_partials: true,
        };
        merged.report(&facts, Some(self.staging))
    }
}

impl Shard<'_> {
    /// Copy the shard's rows into the streams (each row checked to be
    /// one a replay writes) and repeat the duplicate check over its keys;
    /// its tallies and how many rows it had come back.
    fn stream(
        &self,
        input: &PartialInput,
        limit: RowCounts,
        streams: &mut Streams,
        merged: &mut Merged,
        dups: &mut Warnings,
    ) -> crate::Result<(State, RowCounts)> {
        let mut counts = RowCounts::default();
        // Each table's cells as declared (a scope key may hold a comma, so
        // no header text is split to count them).
        let columns = |file| {
            crate::summary::schema::table(file)
                .columns_for(self.scope.keys())
                .len()
        };
        let [decisions, mismatches, regressions, _] = crate::report::STREAMED_FILES;
        let decision_columns = columns(decisions);
        let mismatch_columns = columns(mismatches);
        let regression_columns = columns(regressions);
        let mut r = PartialReader::open(input)?;
        // The header was read and checked before any shard was merged.
        let Frame::Header(_) = r.next()? else {
            return Err(self.damaged("it does not open with its header"));
        };
        let mut state = None;
        loop {
            let frame = r.next()?;
            // The writer ends with its tallies: anything else after them
            // (a second tallies frame, rows the first did not count) is
            // not a replay's.
            if state.is_some() && !matches!(frame, Frame::End) {
                return Err(self.damaged("frames after its tallies"));
            }
            match frame {
                Frame::Header(_) => return Err(self.damaged("a second header")),
                Frame::Decisions(rows) => {
                    self.scope_fits()?;
                    counts.decisions += self.replay_rows(&rows, decision_columns)?;
                    self.within(counts, limit)?;
                    streams.decisions(&self.relabel(&rows)?)?
                }
                Frame::Mismatches(rows) => {
                    counts.mismatches += self.replay_rows(&rows, mismatch_columns)?;
                    self.within(counts, limit)?;
                    streams.mismatches(&self.relabel(&rows)?)?
                }
                Frame::Regressions(rows) => {
                    self.scope_fits()?;
                    counts.regressions += self.replay_rows(&rows, regression_columns)?;
                    self.within(counts, limit)?;
                    streams.regressions(&self.relabel(&rows)?)?
                }
                Frame::Rejects(rejects) => {
                    self.check_sources(rejects.iter().map(|r| r.source))?;
                    streams.rejects(&rejects, self.offset)?;
                }
                Frame::Keys(keys) => {
                    self.check_sources(keys.iter().map(|k| k.1))?;
                    let keys: Vec<_> = keys
                        .into_iter()
                        .map(|(k, s, l)| (k, s + self.offset, l))
                        .collect();
                    merged.dups.check(&keys, dups);
                }
                Frame::State(s) => state = Some(*s),
                Frame::End => break,
            }
        }
        r.expect_end()?;
        let state = state.ok_or_else(|| self.damaged("it has no tallies"))?;
        Ok((state, counts))
    }

    /// How many rows `rows` holds, each of `columns` cells as a replay
    /// writes them (well quoted, no cell a spreadsheet would run); else
    /// the partial result was crafted or damaged, and nothing of it may
    /// reach a report.
    fn replay_rows(&self, rows: &[u8], columns: usize) -> crate::Result<u64> {
        replay_rows(rows, columns).map_err(|why| self.damaged(why))
    }

    /// The rows so far are within what the shard's tallies allow.
    fn within(&self, rows: RowCounts, limit: RowCounts) -> crate::Result<()> {
        match rows.decisions <= limit.decisions
            && rows.mismatches <= limit.mismatches
            && rows.regressions <= limit.regressions
        {
            true => Ok(()),
            false => Err(self.damaged(&format!(
                "more rows than its tallies count ({} decision rows of at most {}, {} mismatch rows of at most {}, {} regression rows of at most {})",
                rows.decisions,
                limit.decisions,
                rows.mismatches,
                limit.mismatches,
                rows.regressions,
                limit.regressions
            ))),
        }
    }

    /// The tallies agree with themselves on the regressions: the rows
    /// they list are the variants' skips the critic revised or refused.
    fn regressions_agree(&self, totals: &crate::replay::Totals) -> crate::Result<()> {
        match totals.listed_regressions == regressions_counted(totals) {
            true => Ok(()),
            false => Err(self.damaged(&format!(
                "its tallies list {} regressions, where its variants count {}",
                totals.listed_regressions,
                regressions_counted(totals)
            ))),
        }
    }

    /// The shard's rows are as many as its tallies imply: every (turn,
    /// variant) once with `--decisions all`, at most that otherwise, at
    /// most a mismatch a turn, and every regression it counted.
    fn rows_fit_tallies(
        &self,
        rows: RowCounts,
        totals: &crate::replay::Totals,
        opts: &crate::replay::ReplayOptions,
    ) -> crate::Result<()> {
        let cells = u128::from(totals.turns) * opts.plan.variants.len() as u128;
        let decisions = u128::from(rows.decisions);
        let fits = match opts.tallies.decisions {
            crate::replay::DecisionsMode::All => decisions == cells,
            crate::replay::DecisionsMode::Changed => decisions <= cells,
            crate::replay::DecisionsMode::None => decisions == 0,
        };
        if !fits || rows.mismatches > totals.turns || rows.regressions != totals.listed_regressions
        {
            return Err(self.damaged(&format!(
                "{} decision rows, {} mismatch rows and {} regression rows, where its tallies count {} turns of {} variants and {} regressions",
                rows.decisions,
                rows.mismatches,
                rows.regressions,
                totals.turns,
                opts.plan.variants.len(),
                totals.listed_regressions
            )));
        }
        Ok(())
    }

    /// Merge the shard's tallies (sources renumbered, its own duplicate
    /// warnings left out: the merge's check covers every shard); notes on
    /// what the merge cannot make exact.
    fn absorb(
        &self,
        mut s: State,
        merged: &mut Merged,
        shards: usize,
    ) -> crate::Result<Vec<String>> {
        self.check_shape(&s, merged)?;
        if !s.regressions.is_empty() {
            self.scope_fits()?;
        }
        s.totals
            .warnings
            .0
            .remove(&crate::replay::WarningKind::DuplicateTurn);
        for (_, examples) in s.totals.warnings.0.values_mut() {
            self.check_sources(examples.iter().map(|e| e.0))?;
            examples.iter_mut().for_each(|e| e.0 += self.offset);
        }
        self.check_sources(s.regressions.iter().map(|r| r.source))?;
        let variants = merged.totals.variants.len();
        if s.regressions.iter().any(|r| r.variant >= variants) {
            return Err(self.damaged("a regression of a variant past its plan's"));
        }
        for r in &mut s.regressions {
            r.source += self.offset;
        }
        self.distinct_sources(&s, merged)?;
        self.whole_runs(&s, merged)?;
        // Every part named: a new one does not compile until it is folded.
        let State {
            totals,
            regressions,
            sources,
        } = s;
        merged.totals.merge(&totals);
        merged.keep_regressions(regressions);
        for (i, facts) in sources.into_iter().enumerate() {
            merged.sources[self.offset + i] = facts;
        }
        Ok(self.capped_notes(&totals, shards))
    }

    /// A shard past [`MAX_TRACKED_VALUES`] values of a dimension, or past
    /// the segment cell budget, folded the rest into `(other)` on its own; one replay may have kept some of
    /// them (those seen in earlier shards).
    fn capped_notes(&self, t: &crate::replay::Totals, shards: usize) -> Vec<String> {
        if shards < 2 {
            return Vec::new();
        }
        t.segments_capped
            .keys()
            .map(|dim| {
                format!(
                    "{}: more values of {dim} in one shard than segments keep ({MAX_TRACKED_VALUES} a dimension, {MAX_SEGMENT_CELLS} values times variants in all); its later values are in (other), where one replay may have counted some under their value",
                    self.name
                )
            })
            .collect()
    }

    /// Two different files of one name (`n1/traffic.jsonl` and
    /// `n2/traffic.jsonl`, each replayed as `traffic.jsonl`) would repeat
    /// the (source, line) key of decisions.csv; one file in two shards is
    /// the same content (its turns are duplicates, and warned as such).
    fn distinct_sources(&self, s: &State, merged: &Merged) -> crate::Result<()> {
        let hash = |f: &SourceFacts| f.end.as_ref().map(|e| e.xxh3);

        for f in &s.sources {
            let earlier = merged.sources[..self.offset]
                .iter()
                .find(|e| e.name == f.name && hash(e) != hash(f));
            if earlier.is_some() {
                return Err(Error::usage(format!(
                    "{}: its source {} and an earlier shard's are both named {}, but are different files: decisions.csv keys each row by (source, line), which would repeat; replay each shard naming its files by paths that tell them apart (n1/traffic.jsonl, n2/traffic.jsonl)",
                    self.name, f.name, f.name
                )));
            }
        }
        Ok(())
    }

    /// A trace's run or session must lie in one shard: a run whose spans
    /// sit in two files (the Collector rotates files mid-run) is two
    /// incomplete runs when each file is replayed alone, and a session so
    /// split is numbered, and its history read, in each alone. Nothing
    /// merges them back exactly, so the merge is refused, naming them.
    fn whole_runs(&self, s: &State, merged: &Merged) -> crate::Result<()> {
        let shared: Vec<&String> = s
            .totals
            .trace_keys
            .intersection(&merged.totals.trace_keys)
            .collect();
        if shared.is_empty() {
            return Ok(());
        }
        let named: Vec<&str> = shared.iter().take(5).map(|k| k.as_str()).collect();
        let more = match shared.len() - named.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        Err(Error::Usage(crate::said![format!("{}: {} of the trace also {} spans in an earlier shard ({}{more}): a shard replayed alone sees such a run or session in part, so its figures cannot be merged exactly; replay the files that hold one trace in one shard (`replay ", self.name, crate::summary::text::count(shared.len() as u64, "run or session", "runs or sessions"), if shared.len() == 1 { "has" } else { "have" }, named.join("; ")), crate::vocab::Setting::From, " otlp` of all of them at once)"]))
    }

    /// The tallies must be of the plan's variants and this shard's sources.
    fn check_shape(&self, s: &State, merged: &Merged) -> crate::Result<()> {
        let variants = merged.totals.variants.len();
        let segments_fit = s
            .totals
            .segments
            .values()
            .flat_map(|v| v.values())
            .all(|c| c.len() == variants);
        let names_fit = s.sources.iter().map(|f| &f.name).eq(self.sources.iter());
        match s.totals.variants.len() == variants
            && s.totals.skips.len() == variants
            && segments_fit
            && names_fit
        {
            true => Ok(()),
            false => Err(self.damaged("its tallies do not fit its header")),
        }
    }

    /// A shard's rows (decisions, regressions) carry its scope columns:
    /// they must be the merged run's. (A shard without rows may differ: a
    /// file of blank lines finds no keys.)
    fn scope_fits(&self) -> crate::Result<()> {
        if self.scope.keys() == self.merged_scope.keys() {
            return Ok(());
        }
        let keys = |s: &ScopeColumns| s.keys().join(",");
        let named = match keys(self.merged_scope) {
            k if k.is_empty() => "''".to_string(),
            k => k,
        };
        Err(Error::Usage(crate::said![format!("{}: its rows have the scope columns [{}]; one replay of every shard's files finds [{}] in their first turns: replay every shard with ", self.name, keys(self.scope), keys(self.merged_scope)), crate::vocab::Setting::ScopeColumns, format!(" {named}")]))
    }

    fn check_sources(&self, mut indexes: impl Iterator<Item = usize>) -> crate::Result<()> {
        match indexes.all(|i| i < self.sources.len()) {
            true => Ok(()),
            false => Err(self.damaged("a source index past its sources")),
        }
    }

    /// The rows with the merged run's label in place of the shard's.
    fn relabel<'r>(&self, rows: &'r [u8]) -> crate::Result<Cow<'r, [u8]>> {
        if self.old_prefix == self.new_prefix {
            return Ok(Cow::Borrowed(rows));
        }
        relabel(rows, &self.old_prefix, self.new_prefix)
            .map(Cow::Owned)
            .ok_or_else(|| self.damaged("a row does not begin with its label"))
    }

    fn damaged(&self, why: &str) -> Error {
        Error::Read(
            crate::said![
                format!(
                    "{}: damaged partial result: {why}; replay the shard again with ",
                    self.name
                ),
                crate::vocab::Setting::Partial
            ]
            .into(),
        )
    }
}

/// The longest cell a replay writes, with room to spare: texts from the
/// traffic are cut at 4 KiB (a run id, a regression's texts), a scope
/// and its columns at 1 KiB, and a source's path is at most 4 KiB; CSV
/// quoting at most doubles one.
const MAX_CELL_BYTES: usize = 16 << 10;

/// The rows a shard's frames held (or may hold).
#[derive(Clone, Copy, Default)]
struct RowCounts {
    decisions: u64,
    mismatches: u64,
    regressions: u64,
}

impl RowCounts {
    /// The most rows of each table that `totals` allow.
    fn allowed(totals: &crate::replay::Totals, opts: &crate::replay::ReplayOptions) -> RowCounts {
        let variants = opts.plan.variants.len() as u64;
        RowCounts {
            decisions: match opts.tallies.decisions {
                crate::replay::DecisionsMode::None => 0,
                crate::replay::DecisionsMode::All | crate::replay::DecisionsMode::Changed => {
                    totals.turns.saturating_mul(variants)
                }
            },
            mismatches: totals.turns,
            regressions: totals.listed_regressions.min(regressions_counted(totals)),
        }
    }
}

/// The safety regressions the variants count, every skip the critic
/// revised or refused (each a row of regressions.csv); saturating, as a
/// crafted count may be anything.
fn regressions_counted(totals: &crate::replay::Totals) -> u64 {
    totals
        .variants
        .iter()
        .fold(0u64, |n, v| n.saturating_add(v.counts.safety_regressions))
}

/// How many CSV rows `rows` holds, or why they are not rows a replay
/// writes: UTF-8, each row of `columns` cells, a quoted cell closed and
/// doubling its quotes, an unquoted one holding no quote, and no cell
/// opening as a formula would ([`crate::replay::rows::formula_like`]: a
/// replay guards such text with a leading `'`). One pass, linear in the
/// bytes; a cell is looked at past its first byte only when that is `-`.
pub(crate) fn replay_rows(rows: &[u8], columns: usize) -> Result<u64, &'static str> {
    std::str::from_utf8(rows).map_err(|_| "a cell that is not UTF-8")?;
    let mut n = 0;
    let mut at = 0;
    let mut cells = 0;
    while at < rows.len() {
        let (quoted, end) = cell_end(rows, at)?;
        let content = &rows[at + usize::from(quoted)..end - usize::from(quoted)];
        let formula = match content.first() {
            Some(b'-') => {
                let text = String::from_utf8_lossy(content);
                let text = match quoted {
                    true => text.replace("\"\"", "\""),
                    false => text.into_owned(),
                };
                crate::replay::rows::formula_like(&text)
            }
            Some(b'"') => false,
            Some(&c) => crate::replay::rows::formula_like(char::from(c).encode_utf8(&mut [0; 4])),
            None => false,
        };
        if formula {
            return Err("a cell a spreadsheet would run as a formula, which a replay never writes");
        }
        if end - at > MAX_CELL_BYTES {
            return Err("a cell longer than any a replay writes");
        }
        cells += 1;
        match rows.get(end) {
            Some(b',') => at = end + 1,
            Some(b'\n') => {
                if cells != columns {
                    return Err("a row with another number of cells than its header");
                }
                n += 1;
                cells = 0;
                at = end + 1;
            }
            _ => return Err(
                "a cell followed by neither a comma nor a newline (a row cut short, or not CSV)",
            ),
        }
    }
    Ok(n)
}

/// Whether the cell that opens at `at` is quoted, and where it ends (past
/// its closing quote).
fn cell_end(rows: &[u8], at: usize) -> Result<(bool, usize), &'static str> {
    if rows.get(at) != Some(&b'"') {
        let end = at + memchr::memchr3(b',', b'\n', b'"', &rows[at..]).unwrap_or(rows.len() - at);
        if rows.get(end) == Some(&b'"') {
            return Err("a quote inside an unquoted cell");
        }
        return Ok((false, end));
    }
    let mut from = at + 1;
    loop {
        let q = from + memchr::memchr(b'"', &rows[from..]).ok_or("a quoted cell never closed")?;
        if rows.get(q + 1) == Some(&b'"') {
            from = q + 2;
        } else {
            return Ok((true, q + 1));
        }
    }
}

/// `label,`: how a row of the run begins.
fn label_prefix(label: &str) -> Vec<u8> {
    let mut p = Vec::new();
    field(&mut p, label);
    p.push(b',');
    p
}

/// Each CSV row of `rows` with `old` at its start replaced by `new`; None
/// when a row does not begin with `old`. Rows end at a newline outside
/// quotes (a quoted field may hold newlines).
fn relabel(rows: &[u8], old: &[u8], new: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(rows.len() + rows.len() / 8);
    let mut at = 0;
    while at < rows.len() {
        if !rows[at..].starts_with(old) {
            return None;
        }
        let end = row_end(rows, at + old.len())?;
        out.extend_from_slice(new);
        out.extend_from_slice(&rows[at + old.len()..end]);
        at = end;
    }
    Some(out)
}

/// The index past the newline that ends the row going on at `from`.
fn row_end(rows: &[u8], mut from: usize) -> Option<usize> {
    let mut quoted = false;
    loop {
        let i = from + memchr::memchr2(b'"', b'\n', &rows[from..])?;
        match rows[i] {
            b'"' => quoted = !quoted,
            _ if !quoted => return Some(i + 1),
            _ => {}
        }
        from = i + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rows_a_replay_writes_are_counted() {
        assert_eq!(replay_rows(b"a,\"b,\"\"c\",'=d\n,,\"\"\n", 3), Ok(2));
        assert_eq!(replay_rows(b"", 3), Ok(0));
        for (rows, says) in [
            (&b"a,=b,c\n"[..], "formula"),
            (b"a,\"+b\",c\n", "formula"),
            (b"a,b\n", "number of cells"),
            (b"a,b,c,d\n", "number of cells"),
            (b"a,b,c", "newline"),
            (b"a,b\"x,c\n", "quote inside"),
            (b"a,\"b,c\n", "never closed"),
            (b"a,\"b\"x,c\n", "newline"),
            (b"a,\xff,c\n", "UTF-8"),
        ] {
            let e = replay_rows(rows, 3).unwrap_err();
            assert!(e.contains(says), "{rows:?}: {e}");
        }
        // A replay's negative numbers are not formulas.
        assert_eq!(replay_rows(b"-1,-0.5,x\n", 3), Ok(1));
    }

    #[test]
    fn relabel_replaces_the_first_field_of_every_row_and_only_it() {
        let rows = b"a,x,\"two\nlines, \"\"q\"\"\",a\na,y\n";
        let got = relabel(rows, b"a,", b"\"b,c\",").unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "\"b,c\",x,\"two\nlines, \"\"q\"\"\",a\n\"b,c\",y\n"
        );
        assert_eq!(relabel(b"a,x\nz,y\n", b"a,", b"b,"), None);
        assert_eq!(relabel(b"a,x", b"a,", b"b,"), None, "a row without its end");
    }
}
