//! `mine`'s files: the tables (declared in the schema), the pattern list
//! ready to paste, and `mine.json`; each written whole or not at all.

use std::path::Path;

use crate::cmd::mine::scan::Scan;
use crate::cmd::mine::{covers, MineOptions, Mined};
use crate::config::Variant;
use crate::gate::pyre::PySet;
use crate::report::export::{declared_frame, labelled, write_csv, Col, WriteFailure};
use crate::report::put;
use crate::summary::schema;
use crate::Error;

/// A declared table as CSV bytes, `run` first.
fn table(file: &str, run: &str, cols: Vec<(&str, Col)>) -> crate::Result<Vec<u8>> {
    let fail = |e: WriteFailure| Error::Write(crate::Failure::caused(format!("{file}: {e}"), e));
    let declared = schema::table(file).columns_for(&[]);
    let mut df = declared_frame(file, &declared, labelled(&[("run", run)], cols)).map_err(fail)?;
    let mut bytes = Vec::new();
    write_csv(&mut df, &mut bytes, true).map_err(fail)?;
    Ok(bytes)
}

fn proposals_csv(m: &Mined, run: &str) -> crate::Result<Vec<u8>> {
    let p = &m.proposals;
    let s = |f: &dyn Fn(&crate::cmd::mine::Proposal) -> String| {
        Col::Str(p.iter().map(|x| Some(f(x))).collect())
    };
    let u = |f: fn(&crate::cmd::mine::Proposal) -> u64| Col::U64(p.iter().map(f).collect());
    let status = |x: &crate::cmd::mine::Proposal| match x.proposed {
        true => "proposed".to_string(),
        false => "held back".to_string(),
    };
    let cols = vec![
        ("language", s(&|x| x.language.clone())),
        ("pattern", s(&|x| x.pattern.clone())),
        ("phrases", s(&|x| x.phrases.join(";"))),
        ("support", u(|x| x.support)),
        ("new_skips", u(|x| x.new_skips)),
        (
            "saved_usd",
            Col::F64(p.iter().map(|x| x.saved_usd).collect()),
        ),
        ("new_labelled_skips", u(|x| x.new_labelled_skips)),
        ("new_safety_regressions", u(|x| x.new_safety_regressions)),
        (
            "label_coverage",
            Col::F64(
                p.iter()
                    .map(|x| crate::summary::numbers::sig(x.label_coverage))
                    .collect(),
            ),
        ),
        ("labelled_runs", u(|x| x.labelled_runs)),
        (
            "new_regression_rate_upper95",
            Col::F64(p.iter().map(|x| x.new_regression_rate_upper95).collect()),
        ),
        (
            "p_value",
            Col::F64(
                p.iter()
                    .map(|x| crate::summary::numbers::sig(x.p_value))
                    .collect(),
            ),
        ),
        ("status", s(&status)),
        ("why", s(&|x| x.why.clone())),
    ];
    table("proposals.csv", run, cols)
}

fn missed_csv(m: &Mined, scan: &Scan, run: &str) -> crate::Result<Vec<u8>> {
    let proposed: Vec<PySet> = m
        .proposals
        .iter()
        .filter(|p| p.proposed)
        .filter_map(|p| PySet::new(&[&p.pattern], true).ok())
        .collect();
    let (mut lang, mut draft, mut turns, mut usd, mut covered) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (l, drafts) in &scan.missed {
        for (d, missed) in drafts {
            lang.push(Some(l.clone()));
            draft.push(Some(d.clone()));
            turns.push(missed.turns);
            usd.push(Some(
                crate::summary::numbers::usd(Some(missed.usd)).unwrap_or(0.0),
            ));
            covered.push(scan.examples.get(d).is_some_and(|e| covers(&proposed, e)));
        }
    }
    let cols = vec![
        ("language", Col::Str(lang)),
        ("draft", Col::Str(draft)),
        ("turns", Col::U64(turns)),
        ("usd", Col::F64(usd)),
        ("covered", Col::Bool(covered)),
    ];
    table("missed.csv", run, cols)
}

fn risky_csv(scan: &Scan, o: &MineOptions, run: &str) -> crate::Result<Vec<u8>> {
    let mut r: Vec<&crate::cmd::mine::scan::Risky> = scan.risky.iter().collect();
    r.sort_by(|a, b| {
        a.ack_share
            .total_cmp(&b.ack_share)
            .then((a.source, a.line).cmp(&(b.source, b.line)))
    });
    let s = |f: &dyn Fn(&crate::cmd::mine::scan::Risky) -> Option<String>| {
        Col::Str(r.iter().map(|x| f(x)).collect())
    };
    let cols = vec![
        ("source", s(&|x| Some(o.sources[x.source].clone()))),
        ("line", Col::U64(r.iter().map(|x| x.line).collect())),
        ("run_id", s(&|x| Some(x.run_id.clone()))),
        ("turn", Col::OptU64(r.iter().map(|x| x.turn).collect())),
        (
            "ack_share",
            Col::F64(
                r.iter()
                    .map(|x| crate::summary::numbers::sig(Some(x.ack_share)))
                    .collect(),
            ),
        ),
        ("matched", s(&|x| Some(x.matched.clone()))),
        ("draft", s(&|x| Some(x.draft.clone()))),
        ("verdict", s(&|x| x.verdict.map(|v| v.as_str().to_string()))),
        (
            "labelled",
            Col::Bool(r.iter().map(|x| x.labelled).collect()),
        ),
    ];
    table("risky_skips.csv", run, cols)
}

/// `risky_drafts.csv`: the risky skips by draft, most skips first.
fn risky_drafts_csv(scan: &Scan, run: &str) -> crate::Result<Vec<u8>> {
    let mut r: Vec<(&String, &crate::cmd::mine::scan::RiskyDraft)> =
        scan.risky_drafts.iter().collect();
    r.sort_by(|a, b| b.1.skips.cmp(&a.1.skips).then(a.0.cmp(b.0)));
    let u = |f: fn(&crate::cmd::mine::scan::RiskyDraft) -> u64| {
        Col::U64(r.iter().map(|x| f(x.1)).collect())
    };
    let cols = vec![
        (
            "draft",
            Col::Str(r.iter().map(|x| Some(x.0.clone())).collect()),
        ),
        ("skips", u(|d| d.skips)),
        ("labelled", u(|d| d.labelled)),
        ("safety_regressions", u(|d| d.safety_regressions)),
        (
            "ack_share",
            Col::F64(
                r.iter()
                    .map(|x| crate::summary::numbers::sig(Some(x.1.ack_share)))
                    .collect(),
            ),
        ),
        (
            "matched",
            Col::Str(r.iter().map(|x| Some(x.1.matched.clone())).collect()),
        ),
    ];
    table("risky_drafts.csv", run, cols)
}

/// The variant with every proposed pattern added, as a config table.
fn proposals_toml(m: &Mined, v: &Variant, base: &crate::deployment::Deployment) -> String {
    let mut config = v.config.clone();
    config.metacognition_trivial_ack_patterns = crate::gate::ack_patterns(&v.config);
    let added: Vec<&str> = m
        .proposals
        .iter()
        .filter(|p| p.proposed)
        .map(|p| p.pattern.as_str())
        .collect();
    config
        .metacognition_trivial_ack_patterns
        .extend(added.iter().map(|p| p.to_string()));
    let body = toml::to_string(&config).expect("a gate config serializes")
        + &v.deployment_toml("mined", base);
    format!(
        "# mine: variant {}'s ack patterns (the built-ins spelled out) and {} proposed pattern(s); those held back are left out\n[variants.mined]\n{body}",
        v.name,
        added.len()
    )
}

/// Every file of `mine` into `out` (created if needed).
pub fn all(m: &Mined, scan: &Scan, o: &MineOptions, v: &Variant, out: &Path) -> crate::Result<()> {
    std::fs::create_dir_all(out)
        .map_err(|e| Error::Write(crate::Failure::caused(format!("{}: {e}", out.display()), e)))?;
    let run = o.run_name(out);
    put(out, "proposals.csv", &proposals_csv(m, &run)?)?;
    put(out, "missed.csv", &missed_csv(m, scan, &run)?)?;
    put(out, "risky_skips.csv", &risky_csv(scan, o, &run)?)?;
    put(out, "risky_drafts.csv", &risky_drafts_csv(scan, &run)?)?;
    put(
        out,
        "proposals.toml",
        proposals_toml(m, v, &o.plan.deployment).as_bytes(),
    )?;
    let json = serde_json::to_string_pretty(m).expect("serializes") + "\n";
    put(out, "mine.json", json.as_bytes())
}
