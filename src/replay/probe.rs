//! Production's config checked against its recording: the turns
//! production's variant fires on that carry no critic event at all.
//!
//! A critic call that fails can leave such a turn, but where it fails
//! does not depend on why the gate fired. A config that is not
//! production's leaves them where its settings differ from production's
//! (acks its patterns miss, confidences under its threshold): they gather
//! on one first reason of the variant's decision, or on the turns another
//! setting of the config's axes would skip. [`Probe`] holds those
//! settings; [`ProbeTally`] counts, per first reason, the fires with and
//! without an event, and per setting, how many of the fires without one
//! it skips against how many of a fixed sample of those with one (the
//! coin key's hash, one in [`SAMPLE_EVERY`], so the cost stays off most
//! turns). [`ProbeTally::finding`] says whether the fires without an
//! event gather beyond chance, and which setting explains them: each
//! comparison is two exact one-sided bounds at [`ALPHA`] that do not
//! overlap, so a recording whose missing events fall at random warns
//! with probability at most 2 [`ALPHA`] per comparison (17 at most).

use crate::config::{ConfigError, FrameworkConfig};
use crate::gate::{DraftFeatures, Evaluation, Gate, Reason};
use crate::read::turn::{Production, Turn};
use crate::stats::{clopper_pearson_lower, clopper_pearson_upper};

/// One in this many fires with a critic event is evaluated under every
/// setting (by the hash of its coin key: the same in any order).
pub(crate) const SAMPLE_EVERY: u64 = 32;

/// Each one-sided bound's level.
pub(crate) const ALPHA: f64 = 1e-4;

/// The fewest fires without an event a finding names.
pub(crate) const AT_LEAST: u64 = 10;

/// Production's variant's config, and the settings of its axes that
/// would skip more: what could explain fires production never reviewed.
pub(crate) struct Probe {
    settings: Vec<(String, Gate)>,
}

impl Probe {
    /// The settings tried for `c`: the selective gate on (for a legacy
    /// config), symfonic's built-in ack patterns (for a smart one with
    /// patterns of its own), and lower confidence thresholds (legacy).
    pub(crate) fn of(c: &FrameworkConfig) -> Result<Probe, ConfigError> {
        let mut settings = Vec::new();
        let mut add = |name: String, f: &dyn Fn(&mut FrameworkConfig)| {
            let mut x = c.clone();
            f(&mut x);
            Gate::new(x).map(|g| settings.push((name, g)))
        };
        if !c.metacognition_selective_gate {
            add("metacognition_selective_gate = true".into(), &|x| {
                x.metacognition_selective_gate = true
            })?;
            let t = c.metacognition_confidence_threshold;
            for lower in [0.5, 0.4, 0.3].into_iter().filter(|&l| l < t).take(2) {
                add(
                    format!("metacognition_confidence_threshold = {lower}"),
                    &|x| x.metacognition_confidence_threshold = lower,
                )?;
            }
        } else if !c.metacognition_trivial_ack_patterns.is_empty() {
            add(
                "metacognition_trivial_ack_patterns = [] (symfonic's built-in ack patterns)".into(),
                &|x| x.metacognition_trivial_ack_patterns.clear(),
            )?;
        }
        Ok(Probe { settings })
    }

    /// One turn production's variant decided (`eval`): [`Probe::add`].
    pub(crate) fn add_evaluated(&self, tally: &mut ProbeTally, t: &Turn, eval: &Evaluation) {
        let fired = eval.fires().then(|| Fired {
            first: eval
                .reasons()
                .iter()
                .next()
                .unwrap_or(Reason::LowConfidence),
            empty: t.draft.trim().is_empty(),
        });
        self.add(tally, t, fired, None);
    }

    /// One turn production's variant decided: `fired` when it fires;
    /// `features` are the draft's, when worked out already.
    pub(crate) fn add(
        &self,
        tally: &mut ProbeTally,
        t: &Turn,
        fired: Option<Fired>,
        features: Option<&DraftFeatures<'_>>,
    ) {
        // symfonic reviews no empty reply: no event is expected there.
        let Some(Fired {
            first,
            empty: false,
        }) = fired
        else {
            return;
        };
        let recorded = match t.production() {
            Production::Fired => true,
            Production::Unknown => false,
            // An event where no critic ran: a disagreement, counted there.
            Production::Skipped => return,
        };
        tally.by_reason[usize::from(!recorded)][first as usize] += 1;
        let sampled = recorded && {
            // The turn's identity hashed without building the coin's key
            // (no allocation on the turns that are not sampled).
            let h = match (t.turn_id.as_deref(), t.turn) {
                (Some(id), _) => xxhash_rust::xxh3::xxh3_64(id.as_bytes()),
                (None, n) => xxhash_rust::xxh3::xxh3_64_with_seed(
                    t.run_id.as_bytes(),
                    n.map_or(u64::MAX, |n| n),
                ),
            };
            h.is_multiple_of(SAMPLE_EVERY)
        };
        if recorded && !sampled {
            return;
        }
        tally.sampled += u64::from(sampled);
        tally
            .settings
            .resize(self.settings.len(), SettingTally::default());
        match features {
            Some(f) => self.try_settings(tally, t, f, recorded),
            None => self.try_settings(tally, t, &DraftFeatures::of(&t.draft), recorded),
        }
    }

    /// Each setting's decision on a fire without an event, or a sampled
    /// one with an event (`recorded`).
    fn try_settings(
        &self,
        tally: &mut ProbeTally,
        t: &Turn,
        features: &DraftFeatures<'_>,
        recorded: bool,
    ) {
        for ((_, gate), s) in self.settings.iter().zip(tally.settings.iter_mut()) {
            if gate.evaluate_with(t, features).fires() {
                continue;
            }
            match recorded {
                true => s.skips_sampled += 1,
                false => s.skips_unrecorded += 1,
            }
        }
    }

    /// What `tally` finds: fires without an event beyond chance, and the
    /// setting that explains most of them, if one does.
    pub(crate) fn finding(&self, tally: &ProbeTally) -> Option<Finding> {
        let unrecorded: u64 = tally.by_reason[1].iter().sum();
        let recorded: u64 = tally.by_reason[0].iter().sum();
        if unrecorded < AT_LEAST || recorded == 0 {
            return None;
        }
        let beyond = |k: u64, n: u64, rest_k: u64, rest_n: u64| {
            k >= AT_LEAST
                && match (
                    clopper_pearson_lower(k, n, ALPHA),
                    clopper_pearson_upper(rest_k, rest_n, ALPHA),
                ) {
                    (Some(lo), Some(hi)) => lo > hi,
                    _ => false,
                }
        };
        let setting = self
            .settings
            .iter()
            .zip(&tally.settings)
            .filter(|(_, s)| {
                beyond(
                    s.skips_unrecorded,
                    unrecorded,
                    s.skips_sampled,
                    tally.sampled,
                )
            })
            .max_by_key(|(_, s)| s.skips_unrecorded)
            .map(|((name, _), s)| Explained {
                setting: name.clone(),
                skips: s.skips_unrecorded,
                recorded_share: s.skips_sampled as f64 / tally.sampled as f64,
            });
        let total = unrecorded + recorded;
        let reason = Reason::ALL
            .iter()
            .map(|&r| {
                let (k, n) = (
                    tally.by_reason[1][r as usize],
                    tally.by_reason[0][r as usize] + tally.by_reason[1][r as usize],
                );
                (r, k, n)
            })
            .filter(|&(_, k, n)| beyond(k, n, unrecorded - k, total - n))
            .max_by_key(|&(_, k, _)| k);
        (setting.is_some() || reason.is_some()).then_some(Finding {
            unrecorded,
            fires: total,
            setting,
            reason,
        })
    }
}

/// A fire of production's variant: its first reason, and whether its
/// draft is empty (no critic reviews an empty reply).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fired {
    pub first: Reason,
    pub empty: bool,
}

/// Production's variant's fires, counted against its recording.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProbeTally {
    /// Fires on non-empty drafts by their first reason: `[0]` with a
    /// critic event of a critic that ran, `[1]` with no event at all.
    pub by_reason: [[u64; 13]; 2],
    /// Fires with an event in the sample every setting is tried on.
    pub sampled: u64,
    /// Per setting of the [`Probe`], in its order.
    pub settings: Vec<SettingTally>,
}

/// What one setting skips of production's variant's fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SettingTally {
    /// Of the fires without an event.
    pub skips_unrecorded: u64,
    /// Of the sampled fires with one.
    pub skips_sampled: u64,
}

impl ProbeTally {
    pub fn merge(&mut self, o: &ProbeTally) {
        for (a, b) in self.by_reason.iter_mut().zip(&o.by_reason) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.sampled += o.sampled;
        if self.settings.len() < o.settings.len() {
            self.settings
                .resize(o.settings.len(), SettingTally::default());
        }
        for (a, b) in self.settings.iter_mut().zip(&o.settings) {
            a.skips_unrecorded += b.skips_unrecorded;
            a.skips_sampled += b.skips_sampled;
        }
    }
}

/// Fires of production's variant without a critic event, beyond what
/// failed calls explain.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Finding {
    pub unrecorded: u64,
    /// Fires on non-empty drafts, with an event or none.
    pub fires: u64,
    pub setting: Option<Explained>,
    /// The first reason they gather on: its fires without an event, and
    /// all its fires.
    pub reason: Option<(Reason, u64, u64)>,
}

/// A setting that skips most of those fires and few of the recorded ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Explained {
    pub setting: String,
    pub skips: u64,
    /// The share of the sampled fires with an event it skips.
    pub recorded_share: f64,
}

impl Finding {
    /// The warning, for production's variant `variant`.
    pub(crate) fn said(&self, variant: &str) -> String {
        let mut s = format!(
            "production's config probably differs from the one given: {} turns it fires on have no critic event (variant {variant}, of {} fires), more than failed critic calls explain",
            self.unrecorded, self.fires
        );
        if let Some((r, k, n)) = self.reason {
            s.push_str(&format!(
                "; they gather where it fires for {} ({k} of its {n} fires there have none)",
                r.name()
            ));
        }
        match &self.setting {
            Some(e) => s.push_str(&format!(
                "; with {} production's gate would skip {} of them and {:.1}% of the fires that have one: set it in the config if production ran it",
                e.setting,
                e.skips,
                e.recorded_share * 100.0
            )),
            None => s.push_str(
                "; no one setting tried (the selective gate, symfonic's built-in ack patterns, a lower threshold) explains them: compare the config with production's",
            ),
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(draft: &str, i: u64, critic: bool) -> String {
        let critic = match critic {
            true => r#","critic":{"verdict":"approve","input_tokens":10,"output_tokens":5}"#,
            false => "",
        };
        format!(
            r#"{{"run_id":"r{i}","turn":1,"draft":"{draft}","confidence":0.9,"tool_calls_this_turn":[]{critic}}}"#
        )
    }

    fn tally_of(c: &FrameworkConfig, lines: &[String]) -> (Probe, ProbeTally) {
        let probe = Probe::of(c).unwrap();
        let gate = Gate::new(c.clone()).unwrap();
        let mut t = ProbeTally::default();
        for l in lines {
            let turn = Turn::parse(l).unwrap();
            probe.add_evaluated(&mut t, &turn, &gate.evaluate(&turn));
        }
        (probe, t)
    }

    fn smart(patterns: &[&str]) -> FrameworkConfig {
        FrameworkConfig {
            metacognition_selective_gate: true,
            metacognition_trivial_ack_patterns: patterns.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Production ran the built-in ack patterns; the config gives English
    /// ones only: the German acks production skipped carry no event, and
    /// the built-ins explain them.
    #[test]
    fn acks_production_skipped_are_found_and_explained() {
        let c = smart(&[r"^\s*(thanks|ok)\W*$"]);
        let mut lines = Vec::new();
        for i in 0..4000 {
            lines.push(match i % 4 {
                0 => turn("Danke!", i, false),
                _ => turn(
                    "The refund was sent to the card ending 4242 today.",
                    i,
                    true,
                ),
            });
        }
        let (probe, t) = tally_of(&c, &lines);
        let f = probe.finding(&t).expect("a finding");
        assert_eq!(f.unrecorded, 1000);
        let e = f.setting.clone().expect("explained");
        assert!(e.setting.contains("built-in"), "{e:?}");
        assert_eq!(e.skips, 1000);
        assert!(f
            .said("smart")
            .contains("1000 turns it fires on have no critic event"));
    }

    /// Calls that fail at random (5% of every kind of fire, no event)
    /// are no finding.
    #[test]
    fn failures_at_random_are_no_finding() {
        let c = smart(&[r"^\s*(thanks|ok)\W*$"]);
        let mut lines = Vec::new();
        for i in 0..8000u64 {
            let failed = xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()).is_multiple_of(20);
            lines.push(match i % 4 {
                0 => turn("Danke!", i, !failed),
                _ => turn(
                    "The refund was sent to the card ending 4242 today.",
                    i,
                    !failed,
                ),
            });
        }
        let (probe, t) = tally_of(&c, &lines);
        assert!(t.by_reason[1].iter().sum::<u64>() > 300);
        assert_eq!(probe.finding(&t), None);
    }

    /// The guarantee, simulated as traffic is: a tally of fires in runs
    /// of 1 to 8 turns, each run's critic events lost together (a run
    /// whose calls failed) at rates from 1% to 30% and turn by turn at 2%
    /// more, its fires' first reasons and what each setting would skip
    /// both depending on the reason (so a loss unrelated to either is
    /// what must not warn). Over 2,000 recordings of about 4,000 fires,
    /// no warning at all (the design allows 0.02% a comparison, 17 at
    /// most); with production's acks (a reason's fires the setting
    /// skips) carrying no event, as under another config, every one
    /// warns.
    #[test]
    fn missing_events_at_random_never_warn_and_a_wrong_config_always_does() {
        let reps: u64 = std::env::var("CRITIC_GATE_PROBE_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000);
        let probe = Probe::of(&FrameworkConfig::default()).unwrap();
        let settings = probe.settings.len();
        // Reasons as a legacy gate's fires spread (by index), and each
        // setting's chance to skip a fire of that reason.
        let reasons = [(0usize, 0.6), (1, 0.25), (2, 0.15)];
        let skip = |setting: usize, reason: usize| match (setting, reason) {
            (0, 0) => 0.7,
            (0, _) => 0.05,
            (_, 2) => 0.5,
            _ => 0.1,
        };
        let mut rng = crate::stats::SplitMix(63);
        let mut warned = [0u64; 2];
        for rep in 0..reps {
            let wrong = rep % 2 == 1;
            let run_loss = [0.01, 0.05, 0.3][(rep / 2 % 3) as usize];
            let mut t = ProbeTally {
                settings: vec![SettingTally::default(); settings],
                ..Default::default()
            };
            let mut fires = 0;
            while fires < 4_000 {
                let size = 1 + (rng.next() * 8.0) as u64 % 8;
                let lost = rng.next() < run_loss;
                for _ in 0..size {
                    fires += 1;
                    let u = rng.next();
                    let reason = match u {
                        u if u < reasons[0].1 => reasons[0].0,
                        u if u < reasons[0].1 + reasons[1].1 => reasons[1].0,
                        _ => reasons[2].0,
                    };
                    let skips: Vec<bool> = (0..settings)
                        .map(|k| rng.next() < skip(k, reason))
                        .collect();
                    // Under another config: production skipped (no event)
                    // the fires setting 0 skips.
                    let unrecorded =
                        lost || rng.next() < 0.02 || (wrong && skips[0] && reason == 0);
                    t.by_reason[usize::from(unrecorded)][reason] += 1;
                    let sampled = !unrecorded && rng.next() < 1.0 / SAMPLE_EVERY as f64;
                    t.sampled += u64::from(sampled);
                    for (k, s) in t.settings.iter_mut().enumerate() {
                        s.skips_unrecorded += u64::from(unrecorded && skips[k]);
                        s.skips_sampled += u64::from(sampled && skips[k]);
                    }
                }
            }
            warned[usize::from(wrong)] += u64::from(probe.finding(&t).is_some());
        }
        let half = reps / 2;
        assert_eq!(warned[0], 0, "false warnings in {half} recordings");
        assert_eq!(
            warned[1], half,
            "a wrong config warned in {} of {half}",
            warned[1]
        );
    }
}
