//! What `monitor` keeps between runs (`--state`): per day, the turns
//! and production's fires per stratum, the plan's tally of its skips
//! (`DesignTally`) and every drawn skip's verdict in the coin key's order.
//! Every figure is derived from it afresh, so a state grown day by day, a
//! state of shards merged and one pass over all the traffic give the same
//! files, whatever the periods (`--by`) they are shown in. A day already
//! counted is refused, not counted twice.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::replay::design::{DesignTally, Verdict};
use crate::Error;

/// The version of the state file this build writes and reads.
/// 2: each verdict names its conversation (the change alarm takes one
/// per conversation a day).
pub const STATE_FORMAT: u64 = 2;

/// Turns and production's fires of one stratum in one period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turns {
    pub turns: u64,
    pub fires: u64,
}

/// One day's counts (or a period's, days absorbed in order).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Period {
    /// By stratum (every turn, fired or skipped).
    pub turns: BTreeMap<String, Turns>,
    pub design: DesignTally,
    /// The drawn skips' verdicts, ordered by their key.
    pub verdicts: Vec<Verdict>,
    /// What the change alarms step through, day by day ([`State::periods`]
    /// derives it; never stored): of each day's verdicts, one per
    /// conversation and stratum.
    #[serde(skip)]
    pub chart: Vec<Verdict>,
}

impl Period {
    pub fn new(design: &crate::replay::design::Design) -> Period {
        Period {
            design: DesignTally::new(design),
            ..Default::default()
        }
    }

    /// Another shard's counts of the same day (its drawn skips checked
    /// apart, by the state).
    pub fn merge(&mut self, o: &Period) {
        self.absorb(o);
        self.verdicts.sort();
    }

    /// Why the counts cannot be a day `monitor` counted (a state edited by
    /// hand), if they cannot.
    pub fn problem(&self, design: &crate::replay::design::Design) -> Option<String> {
        for (name, t) in &self.design.strata {
            let labelled = t.shadow + t.production;
            if t.drawn > t.skips || labelled + t.failed > t.drawn || t.regressions > labelled {
                return Some(format!(
                    "stratum {name:?} counts more draws, labels or regressions than it can"
                ));
            }
            if design.stratum_of(name).1.to_bits() != t.probability.to_bits() {
                return Some(format!(
                    "stratum {name:?} has probability {}, not the plan's",
                    t.probability
                ));
            }
            let verdicts = self.verdicts.iter().filter(|v| &v.stratum == name);
            let (n, r) = verdicts.fold((0, 0), |(n, r), v| (n + 1, r + u64::from(v.regression)));
            if n != labelled || r != t.regressions {
                return Some(format!(
                    "stratum {name:?}'s verdicts do not match its counts"
                ));
            }
            let turns = self.turns.get(name).copied().unwrap_or_default();
            if turns.fires > turns.turns || t.skips > turns.turns - turns.fires {
                return Some(format!("stratum {name:?} counts more skips than turns"));
            }
        }
        let labelled: u64 = self.design.strata.values().map(|t| t.labelled()).sum();
        (self.verdicts.len() as u64 != labelled)
            .then(|| "its verdicts do not match its counts".into())
    }

    /// The day's verdicts a change alarm takes: per stratum and
    /// conversation, the one of the lowest key, in key order. The key is
    /// the XXH3-64 of the coin key, unrelated to the verdict, so the one kept is a
    /// random one of the conversation's and regresses at the skips' rate;
    /// conversations are independent where their turns are not, so the
    /// chart's labels are independent draws at that rate, as it is
    /// designed for, however a derailing conversation's labels cluster.
    fn one_per_conversation(&self) -> impl Iterator<Item = &Verdict> {
        let mut seen = std::collections::HashSet::new();
        self.verdicts
            .iter()
            .filter(move |v| seen.insert((v.stratum.as_str(), v.conversation)))
    }

    /// The next day of a period: its counts added, its verdicts after
    /// this one's (a chart steps through a period day by day).
    pub fn absorb(&mut self, o: &Period) {
        for (s, t) in &o.turns {
            let a = self.turns.entry(s.clone()).or_default();
            a.turns += t.turns;
            a.fires += t.fires;
        }
        self.design.merge(&o.design);
        self.verdicts.extend(o.verdicts.iter().cloned());
    }
}

/// A monitor's state: the plan it follows and the days counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub format: u64,
    pub plan_id: String,
    /// The release field the slots name (`scope.KEY...`), if any.
    #[serde(default)]
    pub release_field: Option<String>,
    /// By slot: the day (`YYYY-MM-DD`), and the release after a tab when
    /// the state has a release field.
    pub days: BTreeMap<String, Period>,
    /// The traffic files counted into it, by content (XXH3-64 and size),
    /// with the name each was first read under: a file is counted once,
    /// whatever days it holds.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

impl State {
    pub fn new(plan_id: &str, release_field: Option<&str>) -> State {
        State {
            format: STATE_FORMAT,
            plan_id: plan_id.into(),
            release_field: release_field.map(str::to_string),
            days: BTreeMap::new(),
            sources: Default::default(),
        }
    }

    /// The drawn skips' keys of every slot.
    fn keys(&self) -> std::collections::BTreeSet<u64> {
        self.days
            .values()
            .flat_map(|p| p.design.keys.iter().copied())
            .collect()
    }

    /// Refuse `o` where it holds a file or a drawn skip this state counts
    /// already: the same traffic twice (or re-sent under another day).
    fn disjoint(&self, o: &State, from: &str) -> crate::Result<()> {
        if let Some(name) = o
            .sources
            .iter()
            .find(|(k, _)| self.sources.contains_key(*k))
            .map(|(_, n)| n)
        {
            return Err(Error::usage(format!(
                "{from}: the traffic file {name} is counted in the state already (a file is counted once; shards hold different traffic)"
            )));
        }
        let mine = self.keys();
        if let Some(day) = o
            .days
            .iter()
            .find(|(_, p)| p.design.keys.iter().any(|k| mine.contains(k)))
            .map(|(d, _)| d)
        {
            return Err(Error::usage(format!(
                "{from}: its day {} holds drawn skips the state counts already (the same turns twice: a duplicated file, a shard merged twice, or turns re-sent under another ts)",
                day.replace('\t', " of release ")
            )));
        }
        Ok(())
    }

    /// The slots grouped into `cut`'s periods, in time order (releases
    /// named by a field: by the first day each was seen, then by name);
    /// a period's slots in day order, each period's `chart` filled.
    pub fn periods(&self, cut: &super::period::Cut) -> Vec<(String, Period)> {
        let mut out: Vec<(String, Period)> = Vec::new();
        let mut first: BTreeMap<String, String> = BTreeMap::new();
        for (slot, p) in &self.days {
            let name = cut.of_slot(slot);
            let day = super::period::day_of_slot(slot);
            first.entry(name.clone()).or_insert_with(|| day.to_string());
            let i = match out.iter().rposition(|(n, _)| *n == name) {
                Some(i) => {
                    out[i].1.absorb(p);
                    i
                }
                None => {
                    out.push((name, p.clone()));
                    out.len() - 1
                }
            };
            out[i].1.chart.extend(p.one_per_conversation().cloned());
        }
        out.sort_by(|a, b| (&first[&a.0], &a.0).cmp(&(&first[&b.0], &b.0)));
        out
    }

    /// Read a state, refused when it is of another format, plan or
    /// release field.
    pub fn read(
        path: &Path,
        design: &crate::replay::design::Design,
        release_field: Option<&str>,
    ) -> crate::Result<State> {
        let plan_id = design.plan_id.as_str();
        let name = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Read(crate::Failure::caused(
                format!("{name}: cannot read the monitor's state: {e}"),
                e,
            ))
        })?;
        let bad = |m: crate::options::Said| Error::usage(crate::said![format!("{name}: "), m]);
        #[derive(Deserialize)]
        struct Head {
            format: u64,
        }
        let head: Head = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a state `critic-gate monitor` writes: {e}").into()))?;
        if head.format != STATE_FORMAT {
            return Err(bad(format!(
                "state format {} is not this build's ({STATE_FORMAT}); start a new state over the traffic with this build",
                head.format
            ).into()));
        }
        let s: State = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a state `critic-gate monitor` writes: {e}").into()))?;
        if s.plan_id != plan_id {
            return Err(bad(crate::said![format!("the state follows plan {}, not this plan ({plan_id}): give the state of this plan, or a new ", s.plan_id), crate::vocab::Setting::State]));
        }
        if s.release_field.as_deref() != release_field {
            let say = |f: Option<&str>| {
                f.map_or("no release field".to_string(), |f| {
                    format!("release field {f}")
                })
            };
            return Err(bad(crate::said![
                format!(
                    "the state was counted with {}, not {}: give the same ",
                    say(s.release_field.as_deref()),
                    say(release_field)
                ),
                crate::vocab::Setting::ReleaseField,
                " as when it was made"
            ]));
        }
        if s.days.values().any(|p| !p.verdicts.is_sorted()) {
            return Err(bad(
                "its verdicts are out of order: the file was edited".into()
            ));
        }
        for (slot, p) in &s.days {
            let day = super::period::day_of_slot(slot);
            if !super::period::is_date(day) {
                return Err(bad(
                    format!("{slot:?} is not a day: the file was edited").into()
                ));
            }
            if let Some(why) = p.problem(design) {
                return Err(bad(format!("day {day}: {why}: the file was edited").into()));
            }
        }
        Ok(s)
    }

    /// Add the slots of `new`, read from new traffic (`from`, for
    /// messages); a day (and release) this state holds already is refused
    /// by name, and so is a file or a drawn skip it counts already.
    pub fn extend(&mut self, new: State, from: &str) -> crate::Result<()> {
        if let Some(p) = new.days.keys().find(|p| self.days.contains_key(*p)) {
            return Err(Error::Usage(crate::said![format!("{from}: day {} is counted in the state already; a day is added once (give the traffic of new days only, or merge shards' states with ", p.replace('\t', " of release ")), crate::vocab::Setting::Merge, ")"]));
        }
        self.disjoint(&new, from)?;
        self.days.extend(new.days);
        for (k, n) in new.sources {
            self.sources.entry(k).or_insert(n);
        }
        Ok(())
    }

    /// Merge a shard's state: its days added to this one's, a day both
    /// hold merged; refused where both hold the same traffic file or the
    /// same drawn skip.
    pub fn merge(&mut self, o: State, from: &Path) -> crate::Result<()> {
        self.disjoint(&o, &from.display().to_string())?;
        for (name, p) in o.days {
            match self.days.get_mut(&name) {
                Some(a) => a.merge(&p),
                None => {
                    self.days.insert(name, p);
                }
            }
        }
        for (k, n) in o.sources {
            self.sources.entry(k).or_insert(n);
        }
        Ok(())
    }

    pub fn text(&self) -> String {
        serde_json::to_string(self).expect("a state serialises")
    }
}
