//! Production's config checked against its recording: the turns
//! production's variant fires on that carry no critic event at all.
//!
//! A critic call that fails can leave such a turn. A config that is not
//! production's leaves them where its settings differ from production's
//! (acks its patterns miss, confidences under its threshold), and there
//! almost all of the fires have none: they gather on one first reason of
//! the variant's decision, or on the turns another setting of the
//! config's axes would skip while it skips almost none of the fires that
//! have an event (production cannot have run a setting that skips turns
//! its critic reviewed). [`Probe`] holds those settings; [`ProbeTally`]
//! counts, per first reason, the fires with and without an event, and per
//! setting, how many of a fixed sample of each it skips (by a hash of the
//! turn: one in [`SAMPLE_RECORDED`] of those with an event, one in
//! [`SAMPLE_UNRECORDED`] of those without, so the cost stays off most
//! turns). [`Probe::finding`] names a class only when most of its fires
//! have no event, several times the share elsewhere, and two exact
//! one-sided bounds at [`ALPHA`] do not overlap: failures that depend on
//! the draft's length or come in whole runs do not make a class mostly
//! unrecorded (the simulation in the tests holds it).

use crate::config::{ConfigError, FrameworkConfig};
use crate::gate::{DraftFeatures, Evaluation, Gate, Reason};
use crate::read::turn::{Production, Turn};
use crate::stats::{clopper_pearson_lower, clopper_pearson_upper};

/// One in this many fires with a critic event is evaluated under every
/// setting (by a hash of the turn: the same in any order).
pub(crate) const SAMPLE_RECORDED: u64 = 32;

/// One in this many fires without one (a recording of transcripts has
/// none at all: evaluating every fire again would cost the replay).
pub(crate) const SAMPLE_UNRECORDED: u64 = 8;

/// The least share of a class's fires without an event a finding names
/// (a wrong setting leaves almost all of them without one).
pub(crate) const MOSTLY: f64 = 0.5;

/// How many times the share elsewhere that is.
pub(crate) const TIMES: f64 = 2.0;

/// The most a setting that explains the fires may skip of the recorded
/// ones (production's critic reviewed those: its gate fired there).
pub(crate) const RECORDED_AT_MOST: f64 = 0.02;

/// Each one-sided bound's level.
pub(crate) const ALPHA: f64 = 1e-4;

/// The fewest fires without an event a finding names.
pub(crate) const AT_LEAST: u64 = 10;

/// Production's variant's config, and the settings of its axes that
/// would skip more: what could explain fires production never reviewed.
pub(crate) struct Probe {
    settings: Vec<(String, Gate)>,
}

/// A setting tried: how it changes production's variant's config.
#[derive(Clone, Copy, Debug)]
enum Change {
    SelectiveGate,
    Threshold(f64),
    BuiltinAcks,
}

impl Change {
    fn apply(self, c: &mut FrameworkConfig) {
        match self {
            Change::SelectiveGate => c.metacognition_selective_gate = true,
            Change::Threshold(t) => c.metacognition_confidence_threshold = t,
            Change::BuiltinAcks => c.metacognition_trivial_ack_patterns.clear(),
        }
    }

    fn name(self) -> String {
        match self {
            Change::SelectiveGate => "metacognition_selective_gate = true".into(),
            Change::Threshold(t) => format!("metacognition_confidence_threshold = {t}"),
            Change::BuiltinAcks => {
                "metacognition_trivial_ack_patterns = [] (symfonic's built-in ack patterns)".into()
            }
        }
    }

    /// The settings tried for `c`: the selective gate on (for a legacy
    /// config), symfonic's built-in ack patterns (for a smart one with
    /// patterns of its own), and lower confidence thresholds (legacy).
    fn all(c: &FrameworkConfig) -> Vec<Change> {
        if !c.metacognition_selective_gate {
            let t = c.metacognition_confidence_threshold;
            let lower = [0.5, 0.4, 0.3].into_iter().filter(|&l| l < t).take(2);
            return std::iter::once(Change::SelectiveGate)
                .chain(lower.map(Change::Threshold))
                .collect();
        }
        match c.metacognition_trivial_ack_patterns.is_empty() {
            true => Vec::new(),
            false => vec![Change::BuiltinAcks],
        }
    }
}

/// The names of the settings tried for `c` (what [`Probe::finding`] names).
pub(crate) fn setting_names(c: &FrameworkConfig) -> Vec<String> {
    Change::all(c).into_iter().map(Change::name).collect()
}

impl Probe {
    /// The settings tried for production's variant's `gate`, each its gate
    /// changed (its compiled patterns shared where the setting keeps them).
    pub(crate) fn of(gate: &Gate) -> Result<Probe, ConfigError> {
        let settings = Change::all(gate.config())
            .into_iter()
            .map(|ch| Ok((ch.name(), gate.changed(|x| ch.apply(x))?)))
            .collect::<Result<_, ConfigError>>()?;
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
            empty: t.draft.is_empty(),
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
        let every = match recorded {
            true => SAMPLE_RECORDED,
            false => SAMPLE_UNRECORDED,
        };
        if !turn_hash(t).is_multiple_of(every) {
            return;
        }
        tally.sampled[usize::from(!recorded)] += 1;
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

    /// What `tally` finds: fires without an event where a wrong setting
    /// would leave them, and the setting that explains them, if one does.
    pub(crate) fn finding(&self, tally: &ProbeTally) -> Option<Finding> {
        let names: Vec<String> = self.settings.iter().map(|(n, _)| n.clone()).collect();
        finding(&names, tally)
    }
}

/// What `tally` finds, the settings tried named by `names` (in order).
pub(crate) fn finding(names: &[String], tally: &ProbeTally) -> Option<Finding> {
    let unrecorded: u64 = tally.by_reason[1].iter().sum();
    let recorded: u64 = tally.by_reason[0].iter().sum();
    if unrecorded < AT_LEAST || recorded == 0 {
        return None;
    }
    let [sampled_recorded, sampled_unrecorded] = tally.sampled;
    let setting = names
        .iter()
        .zip(&tally.settings)
        .filter(|(_, s)| {
            let share = s.skips_sampled as f64 / sampled_recorded.max(1) as f64;
            share <= RECORDED_AT_MOST
                && mostly(
                    (s.skips_unrecorded, sampled_unrecorded),
                    (s.skips_sampled, sampled_recorded),
                )
        })
        .max_by_key(|(_, s)| s.skips_unrecorded)
        .map(|(name, s)| Explained {
            setting: name.clone(),
            share: s.skips_unrecorded as f64 / sampled_unrecorded as f64,
            recorded_share: s.skips_sampled as f64 / sampled_recorded as f64,
        });
    let total = unrecorded + recorded;
    let reason = Reason::ALL
        .iter()
        .map(|&r| {
            let k = tally.by_reason[1][r as usize];
            (r, k, tally.by_reason[0][r as usize] + k)
        })
        .filter(|&(_, k, n)| mostly((k, n), (unrecorded - k, total - n)))
        .max_by_key(|&(_, k, _)| k);
    (setting.is_some() || reason.is_some()).then(|| Finding {
        unrecorded,
        fires: total,
        setting,
        reason,
        tried: names.to_vec(),
    })
}

/// A hash of the turn, the same in any reading order: its `turn_id`, else
/// its run and number, else its run and draft (never the run alone: a
/// sample of whole runs would be a sample of their kinds).
fn turn_hash(t: &Turn) -> u64 {
    use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};
    match (t.turn_id.as_deref(), t.turn) {
        (Some(id), _) => xxh3_64(id.as_bytes()),
        (None, Some(n)) => xxh3_64_with_seed(t.run_id.as_bytes(), n),
        (None, None) => xxh3_64_with_seed(t.run_id.as_bytes(), xxh3_64(t.draft.as_bytes())),
    }
}

/// Whether `k` of `n` is mostly (at least [`MOSTLY`]), [`TIMES`] the
/// share `rest_k` of `rest_n`, and beyond it by chance: the exact lower
/// bound of the one above the exact upper bound of the other (each at
/// [`ALPHA`]), with at least [`AT_LEAST`].
fn mostly((k, n): (u64, u64), (rest_k, rest_n): (u64, u64)) -> bool {
    if k < AT_LEAST || n == 0 {
        return false;
    }
    let share = k as f64 / n as f64;
    let rest = match rest_n {
        0 => 0.0,
        _ => rest_k as f64 / rest_n as f64,
    };
    let apart = match (
        clopper_pearson_lower(k, n, ALPHA),
        clopper_pearson_upper(rest_k, rest_n, ALPHA),
    ) {
        (Some(lo), Some(hi)) => lo > hi,
        (Some(_), None) => true,
        _ => false,
    };
    share >= MOSTLY && share >= TIMES * rest && apart
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
    /// Fires in the samples every setting is tried on: `[0]` with an
    /// event, `[1]` without.
    pub sampled: [u64; 2],
    /// Per setting of the [`Probe`], in its order.
    pub settings: Vec<SettingTally>,
}

/// What one setting skips of production's variant's fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SettingTally {
    /// Of the sampled fires without an event.
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
        for (a, b) in self.sampled.iter_mut().zip(&o.sampled) {
            *a += b;
        }
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

/// Fires of production's variant without a critic event, gathered where
/// a wrong setting leaves them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Finding {
    pub unrecorded: u64,
    /// Fires on non-empty drafts, with an event or none.
    pub fires: u64,
    pub setting: Option<Explained>,
    /// The first reason they gather on: its fires without an event, and
    /// all its fires.
    pub reason: Option<(Reason, u64, u64)>,
    /// The settings tried.
    pub tried: Vec<String>,
}

/// A setting that skips most of those fires and almost none of the
/// recorded ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Explained {
    pub setting: String,
    /// The share of the sampled fires without an event it skips.
    pub share: f64,
    /// The share of the sampled fires with one it skips.
    pub recorded_share: f64,
}

impl Finding {
    /// The warning, for production's variant `variant`.
    pub(crate) fn said(&self, variant: &str) -> String {
        let mut s = format!(
            "production's config probably differs from the one given: {} turns it fires on have no critic event (variant {variant}, of {} fires), gathered where a setting that is not production's would leave them",
            self.unrecorded, self.fires
        );
        if let Some((r, k, n)) = self.reason {
            s.push_str(&format!(
                "; {k} of its {n} fires for {} have none",
                r.name()
            ));
        }
        match (&self.setting, self.tried.is_empty()) {
            (Some(e), _) => s.push_str(&format!(
                "; with {} production's gate would skip {:.0}% of them and {:.1}% of the fires that have one: set it in the config if production ran it",
                e.setting,
                e.share * 100.0,
                e.recorded_share * 100.0
            )),
            (None, false) => s.push_str(&format!(
                "; none of the settings tried explains them ({}): compare the config with production's",
                self.tried.join("; ")
            )),
            (None, true) => s.push_str("; compare the config with production's"),
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
        let probe = Probe::of(&Gate::new(c.clone()).unwrap()).unwrap();
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
        assert_eq!(e.share, 1.0);
        assert_eq!(e.recorded_share, 0.0);
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

    /// The guarantee, simulated as traffic is: fires in runs of 1 to 8
    /// turns, each run of a kind (a chat, whose fires are mostly for one
    /// reason, or a tool conversation, mostly for the others), each run's
    /// critic events lost together (a run whose calls failed) at 1% to
    /// 30%, and turn by turn at a rate that depends on the reason (2%, 4%,
    /// 6%: timeouts on long drafts); what each setting would skip depends
    /// on the reason too. The config is production's: over 2,000
    /// recordings of about 4,000 fires, no warning. With production's acks
    /// (the fires one setting skips of one reason) carrying no event, as
    /// under another config, every one warns.
    #[test]
    fn missing_events_at_random_never_warn_and_a_wrong_config_always_does() {
        let reps: u64 = std::env::var("CRITIC_GATE_PROBE_REPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2_000);
        let probe = Probe::of(&Gate::new(FrameworkConfig::default()).unwrap()).unwrap();
        let settings = probe.settings.len();
        let skip = |setting: usize, reason: usize| match (setting, reason) {
            (0, 0) => 0.7,
            (0, _) => 0.05,
            (_, 2) => 0.5,
            _ => 0.1,
        };
        let fail = [0.02, 0.04, 0.06];
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
                let chat = rng.next() < 0.6;
                for _ in 0..size {
                    fires += 1;
                    let u = rng.next();
                    let reason = match (chat, u) {
                        (true, u) if u < 0.9 => 0,
                        (true, _) => 1,
                        (false, u) if u < 0.1 => 0,
                        (false, u) if u < 0.6 => 1,
                        _ => 2,
                    };
                    let skips: Vec<bool> = (0..settings)
                        .map(|k| rng.next() < skip(k, reason))
                        .collect();
                    // Under another config: production skipped (no event)
                    // the fires setting 0 skips.
                    let unrecorded =
                        lost || rng.next() < fail[reason] || (wrong && skips[0] && reason == 0);
                    t.by_reason[usize::from(unrecorded)][reason] += 1;
                    let every = match unrecorded {
                        true => SAMPLE_UNRECORDED,
                        false => SAMPLE_RECORDED,
                    };
                    if rng.next() >= 1.0 / every as f64 {
                        continue;
                    }
                    t.sampled[usize::from(unrecorded)] += 1;
                    for (k, s) in t.settings.iter_mut().enumerate() {
                        match unrecorded {
                            true => s.skips_unrecorded += u64::from(skips[k]),
                            false => s.skips_sampled += u64::from(skips[k]),
                        }
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
