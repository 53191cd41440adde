//! The mining pass: every turn through the mined variant's gate, keeping
//! the acks no pattern knows (fires, and `no_ack_pattern` is the only
//! reason), the skips whose ack covers little of the draft, and, with
//! `--stress`, how many skips survive each transformation of their draft.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::phrases::{normalise, script, Missed};
use super::stress::{Stress, TRANSFORMS};
use crate::config::{CostConfig, FrameworkConfig};
use crate::gate::{py_lower, py_strip, Gate, Reason};
use crate::read::reader::{self, Block, Source};
use crate::read::turn::{Turn, Verdict};
use crate::replay::{is_blank, without_bom};
use crate::Error;

/// Distinct normalised drafts kept (the rest are counted, not listed).
pub const MAX_MISSED: usize = 100_000;
/// Risky skips listed at most.
pub const MAX_RISKY: usize = 100_000;

/// A skip whose matched ack covers less than `--max-ack-share` of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Risky {
    pub source: usize,
    pub line: u64,
    pub run_id: String,
    pub turn: Option<u64>,
    pub ack_share: f64,
    pub matched: String,
    pub draft: String,
    pub verdict: Option<Verdict>,
    /// The verdict is of a critic that ran.
    pub labelled: bool,
}

/// The risky skips of one draft, over all its turns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RiskyDraft {
    pub skips: u64,
    pub labelled: u64,
    pub safety_regressions: u64,
    pub ack_share: f64,
    pub matched: String,
}

/// Every risky skip's label, listed or not.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RiskyTotals {
    pub skips: u64,
    pub labelled: u64,
    pub safety_regressions: u64,
}

/// What the pass found.
#[derive(Debug, Default)]
pub struct Scan {
    pub turns: u64,
    pub rejected: u64,
    /// Language (recorded, else a script) -> normalised draft -> missed.
    pub missed: BTreeMap<String, BTreeMap<String, Missed>>,
    /// One lowered, stripped example per normalised draft (what patterns
    /// are matched against).
    pub examples: BTreeMap<String, String>,
    /// Missed turns not listed past [`MAX_MISSED`] drafts.
    pub missed_unlisted: u64,
    /// Distinct drafts listed in `missed`, over every language.
    listed: usize,
    pub skips: u64,
    pub risky: Vec<Risky>,
    pub risky_unlisted: u64,
    pub risky_totals: RiskyTotals,
    /// By draft (at most [`MAX_RISKY`] drafts; the rest are counted).
    pub risky_drafts: BTreeMap<String, RiskyDraft>,
    pub risky_drafts_unlisted: u64,
    pub stress: Option<Stress>,
}

/// What the pass needs.
pub struct ScanSetup<'a> {
    pub config: &'a FrameworkConfig,
    pub cost: &'a CostConfig,
    pub max_ack_share: f64,
    pub stress: bool,
    pub skip_invalid: bool,
    /// How the input becomes traffic (`--from`).
    pub decoder: crate::import::Decoder,
    /// Whether the caller asked the pass to stop (looked at each block).
    pub stopped: &'a dyn Fn() -> bool,
}

/// The recorded critic call's dollars, priced as the replay prices them
/// (0 without tokens or a price: here it only weights phrases).
fn usd(turn: &Turn, cost: &CostConfig) -> f64 {
    let Some(c) = turn.review() else { return 0.0 };
    let tokens = (c.tokens_in.unwrap_or(0), c.tokens_out.unwrap_or(0));
    cost.nano_usd(tokens, c.model.as_deref())
        .map_or(0.0, |n| n as f64 / 1e9)
}

/// Read every source, line by line, into the scan.
pub fn scan(sources: &[String], max_line_bytes: usize, s: &ScanSetup) -> crate::Result<Scan> {
    let gate = Gate::new(s.config.clone())?;
    let mut out = Scan {
        stress: s.stress.then(Stress::default),
        ..Scan::default()
    };
    let read = each_line(
        sources,
        max_line_bytes,
        s.skip_invalid,
        &s.decoder,
        &mut |turn, _, at| one_turn(turn, at, &gate, s, &mut out),
        s.stopped,
    )?;
    (out.turns, out.rejected) = (read.turns, read.rejected);
    Ok(out)
}

/// What a pass over the sources read: turns, and invalid lines set aside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Read {
    pub turns: u64,
    pub rejected: u64,
}

/// Every turn of `sources` (converted by `decoder`), in order, with where
/// it is (source index, line): a serial pass for the commands that read
/// traffic on their own (`mine`, `plan`). An invalid line stops it with
/// its file, line and reason, or with `skip_invalid` is counted.
pub fn each_turn(
    sources: &[String],
    max_line_bytes: usize,
    skip_invalid: bool,
    decoder: &crate::import::Decoder,
    f: &mut dyn FnMut(&Turn, (usize, u64)),
) -> crate::Result<Read> {
    each_line(
        sources,
        max_line_bytes,
        skip_invalid,
        decoder,
        &mut |t, _, at| f(t, at),
        &|| false,
    )
}

/// What [`each_line`] calls for each turn: the turn, its line as read
/// (None for a converted turn) and where it is (source index, line).
pub type OnLine<'f> = dyn FnMut(&Turn, Option<&str>, (usize, u64)) + 'f;

/// [`each_turn`] with each turn's line as read (None for a turn converted
/// from another format, which has no line): for `labels`, which copies
/// the traffic.
pub fn each_line(
    sources: &[String],
    max_line_bytes: usize,
    skip_invalid: bool,
    decoder: &crate::import::Decoder,
    f: &mut OnLine,
    stopped: &dyn Fn() -> bool,
) -> crate::Result<Read> {
    let list: Vec<Source> = sources.iter().map(|n| Source::named(n)).collect();
    let (rx, recycler) = crate::import::open(list, 4, max_line_bytes, decoder)?;
    let mut read = Read::default();
    for block in rx {
        if stopped() {
            return Err(Error::Interrupted);
        }
        let block = block?;
        let converted = decoder.convert(&block);
        let b = converted.as_ref().unwrap_or(&block);
        each_turn_of(b, sources, (skip_invalid, max_line_bytes), &mut read, f)?;
        recycler.give(block);
    }
    Ok(read)
}

/// [`each_turn`] on the worker pool (`pool`, else the process's): `work` sees each turn (and its line as read, None for a converted one) on a worker
/// and returns what the pass keeps of it; `consume` gets those, one turn
/// after another, in input order. What `consume` sees, and the first
/// invalid line that stops the pass, are the serial pass's whatever the
/// number of threads: `sample --threads` writes the same requests.
pub fn each_turn_mapped<R: Send>(
    sources: &[String],
    max_line_bytes: usize,
    skip_invalid: bool,
    decoder: &crate::import::Decoder,
    pool: Option<&rayon::ThreadPool>,
    work: &(dyn Fn(&Turn, Option<&str>) -> Option<R> + Sync),
    consume: &mut dyn FnMut(R) -> crate::Result<()>,
) -> crate::Result<Read> {
    let threads = pool.map_or_else(rayon::current_num_threads, |p| p.current_num_threads());
    let width = 2 * threads + 2;
    let list: Vec<Source> = sources.iter().map(|n| Source::named(n)).collect();
    let (rx, recycler) = crate::import::open(list, width, max_line_bytes, decoder)?;
    let mut read = Read::default();
    crate::replay::ordered::map_in_order(
        pool,
        rx,
        width,
        |item: Result<Block, reader::ReadError>| -> crate::Result<_> {
            let block = item?;
            let converted = decoder.convert(&block);
            let (mut kept, mut counted) = (Vec::new(), Read::default());
            let b = converted.as_ref().unwrap_or(&block);
            // An error here is the block's first invalid line: the
            // blocks before it are consumed first, as the serial pass.
            let done = each_turn_of(
                b,
                sources,
                (skip_invalid, max_line_bytes),
                &mut counted,
                &mut |t, raw, _| kept.extend(work(t, raw)),
            );
            Ok((done.map(|()| (kept, counted)), block))
        },
        |item| -> crate::Result<()> {
            let (done, block) = item?;
            let (kept, counted) = done?;
            read.turns += counted.turns;
            read.rejected += counted.rejected;
            recycler.give(block);
            kept.into_iter().try_for_each(&mut *consume)
        },
    )?;
    Ok(read)
}

fn each_turn_of(
    block: &Block,
    sources: &[String],
    (skip_invalid, max_line_bytes): (bool, usize),
    read: &mut Read,
    f: &mut OnLine,
) -> crate::Result<()> {
    let too_long = |bytes: u64| reader::overlong_reason(bytes, max_line_bytes);
    let invalid = |line: u64, reason: crate::options::Said| Error::InvalidLine {
        source: sources[block.source].clone(),
        line,
        reason,
        skippable: true,
    };
    if let Some(bytes) = block.overlong {
        read.rejected += 1;
        return match skip_invalid {
            true => Ok(()),
            false => Err(invalid(block.first_line, too_long(bytes))),
        };
    }
    if let Some(fail) = block.imported.iter().flat_map(|i| &i.failed).next() {
        match skip_invalid {
            true => read.rejected += block.imported.as_ref().map_or(0, |i| i.failed.len() as u64),
            false => return Err(invalid(fail.line, fail.reason.clone())),
        }
    }
    // Converted turns come as values (and the block then has no lines).
    for (line, c) in block.turns() {
        read.turns += 1;
        f(c.turn(), None, (block.source, line));
    }
    for (line, raw) in reader::lines(block) {
        let raw = without_bom(line, raw);
        if is_blank(raw) {
            continue;
        }
        // The reader refuses a line longer than a block; a shorter one
        // is held to the limit here, as the replay holds it.
        if raw.len() > max_line_bytes {
            match skip_invalid {
                true => read.rejected += 1,
                false => return Err(invalid(line, too_long(raw.len() as u64))),
            }
            continue;
        }
        let parsed = std::str::from_utf8(raw)
            .map_err(|e| format!("bytes are not UTF-8 (at byte {})", e.valid_up_to()))
            .and_then(|t| Turn::parse(t).map(|p| (p, t)).map_err(|e| e.to_string()));
        let (turn, text) = match parsed {
            Ok(t) => t,
            Err(_) if skip_invalid => {
                read.rejected += 1;
                continue;
            }
            Err(reason) => return Err(invalid(line, reason.into())),
        };
        read.turns += 1;
        f(&turn, Some(text), (block.source, line));
    }
    Ok(())
}

/// One turn: a missed ack, a (risky) skip, or neither.
fn one_turn(turn: &Turn, at: (usize, u64), gate: &Gate, s: &ScanSetup, out: &mut Scan) {
    let e = gate.evaluate(turn);
    if e.fires() {
        if e.reasons().single() == Some(Reason::NoAckPattern) {
            note_missed(turn, s, out);
        }
        return;
    }
    if !e.draft_is_trivial_ack() {
        return; // a legacy-gate skip: no ack involved
    }
    out.skips += 1;
    note_risky(turn, at, gate, s.max_ack_share, out);
    if let Some(st) = out.stress.as_mut() {
        st.test(turn, gate, &TRANSFORMS);
    }
}

fn note_missed(turn: &Turn, s: &ScanSetup, out: &mut Scan) {
    let norm = normalise(py_strip(&turn.draft));
    // One language per primary subtag: en, en-GB and en_US are one.
    // An empty tag says no more than none: the script is the group.
    let lang = turn
        .language
        .as_deref()
        .filter(|l| !l.trim().is_empty())
        .map_or_else(
            || format!("({})", script(&norm)),
            |l| {
                l.split(['-', '_'])
                    .next()
                    .unwrap_or(l)
                    .trim()
                    .to_lowercase()
            },
        );
    let entry = out.missed.entry(lang).or_default();
    if !entry.contains_key(&norm) {
        if out.listed >= MAX_MISSED {
            out.missed_unlisted += 1;
            return;
        }
        out.listed += 1;
    }
    out.examples
        .entry(norm.clone())
        .or_insert_with(|| py_lower(py_strip(&turn.draft)).into_owned());
    let m = entry.entry(norm).or_default();
    m.turns += 1;
    m.usd += usd(turn, s.cost);
}

/// The share of the lowered, stripped draft's letters and digits that its
/// acks cover ([`Gate::ack_cover`]), and the matched texts (joined by
/// " + ").
pub fn ack_share(draft: &str, gate: &Gate) -> Option<(f64, String)> {
    let lowered: Cow<str> = py_lower(py_strip(draft));
    let cover = gate.ack_cover(&lowered)?;
    let matched: Vec<&str> = cover.spans.iter().map(|(a, b)| &lowered[*a..*b]).collect();
    Some((cover.share, matched.join(" + ")))
}

fn note_risky(turn: &Turn, (source, line): (usize, u64), gate: &Gate, max: f64, out: &mut Scan) {
    let Some((share, matched)) = ack_share(&turn.draft, gate) else {
        return;
    };
    if share >= max {
        return;
    }
    let review = turn.review();
    let verdict = review.and_then(|c| c.verdict);
    let labelled = review.is_some_and(|c| c.verdict.is_some());
    let regression = u64::from(labelled && verdict.is_some_and(|v| v.is_intervention()));
    let t = &mut out.risky_totals;
    t.skips += 1;
    t.labelled += u64::from(labelled);
    t.safety_regressions += regression;
    let draft = turn.draft.to_string();
    let full = out.risky_drafts.len() >= MAX_RISKY;
    match out.risky_drafts.get_mut(&draft) {
        Some(d) => {
            d.skips += 1;
            d.labelled += u64::from(labelled);
            d.safety_regressions += regression;
        }
        None if full => out.risky_drafts_unlisted += 1,
        None => {
            let d = RiskyDraft {
                skips: 1,
                labelled: u64::from(labelled),
                safety_regressions: regression,
                ack_share: share,
                matched: matched.clone(),
            };
            out.risky_drafts.insert(draft.clone(), d);
        }
    }
    if out.risky.len() >= MAX_RISKY {
        out.risky_unlisted += 1;
        return;
    }
    out.risky.push(Risky {
        source,
        line,
        run_id: turn.run_id.to_string(),
        turn: turn.turn,
        ack_share: share,
        matched,
        draft,
        verdict,
        labelled,
    });
}
