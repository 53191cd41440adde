//! Why a gate decided as it did: a small, ordered set of [`Reason`]s.

use std::fmt;

/// One reason in a decision trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reason {
    // Legacy gate.
    /// `confidence < threshold`.
    LowConfidence = 0,
    /// A sensitive tag was hit.
    SensitiveHit,
    /// Legacy skip: confident and no sensitive hit.
    Confident,
    // Smart gate: the five hard floors.
    Sensitive,
    Fabrication,
    MutatingTool,
    Intent,
    Claims,
    // Smart gate: why the draft is not a trivial ack.
    EmptyDraft,
    TooLong,
    NoAckPattern,
    /// An adopter pattern hit the backtracking limit (treated as FIRE).
    PatternAborted,
    /// Smart skip.
    TrivialAck,
}

/// The five hard floors of the smart gate.
pub type Floor = Reason;

impl Reason {
    pub const ALL: [Reason; 13] = [
        Reason::LowConfidence,
        Reason::SensitiveHit,
        Reason::Confident,
        Reason::Sensitive,
        Reason::Fabrication,
        Reason::MutatingTool,
        Reason::Intent,
        Reason::Claims,
        Reason::EmptyDraft,
        Reason::TooLong,
        Reason::NoAckPattern,
        Reason::PatternAborted,
        Reason::TrivialAck,
    ];

    /// The hard floors, in symfonic's order.
    pub const FLOORS: [Reason; 5] = [
        Reason::Sensitive,
        Reason::Fabrication,
        Reason::MutatingTool,
        Reason::Intent,
        Reason::Claims,
    ];

    /// The reasons a smart gate can fire for, each of which can block a skip.
    pub const SMART_BLOCKERS: [Reason; 9] = [
        Reason::Sensitive,
        Reason::Fabrication,
        Reason::MutatingTool,
        Reason::Intent,
        Reason::Claims,
        Reason::TooLong,
        Reason::NoAckPattern,
        Reason::EmptyDraft,
        Reason::PatternAborted,
    ];

    /// The reasons a legacy gate can fire for.
    pub const LEGACY_BLOCKERS: [Reason; 2] = [Reason::LowConfidence, Reason::SensitiveHit];

    pub fn name(self) -> &'static str {
        match self {
            Reason::LowConfidence => "low_confidence",
            Reason::SensitiveHit => "sensitive_hit",
            Reason::Confident => "confident",
            Reason::Sensitive => "sensitive",
            Reason::Fabrication => "fabrication",
            Reason::MutatingTool => "mutating_tool",
            Reason::Intent => "intent",
            Reason::Claims => "claims",
            Reason::EmptyDraft => "empty_draft",
            Reason::TooLong => "too_long",
            Reason::NoAckPattern => "no_ack_pattern",
            Reason::PatternAborted => "pattern_aborted",
            Reason::TrivialAck => "trivial_ack",
        }
    }

    pub fn from_name(s: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.name() == s)
    }

    pub fn is_floor(self) -> bool {
        Reason::FLOORS.contains(&self)
    }

    /// A sentence for people (used by `explain`).
    pub fn describe(self) -> &'static str {
        match self {
            Reason::LowConfidence => "graph confidence is below the threshold",
            Reason::SensitiveHit => "a sensitive tag was hit",
            Reason::Confident => "confidence is at or above the threshold and no sensitive tag was hit",
            Reason::Sensitive => "floor: a sensitive tag was hit",
            Reason::Fabrication => "floor: the fabrication detector reported findings",
            Reason::MutatingTool => "floor: a tool call is not a known read-only tool",
            Reason::Intent => "floor: the intent is action or ambiguous",
            Reason::Claims => "floor: the draft makes claims (a digit, currency sign, hex ID or two capitalised words)",
            Reason::EmptyDraft => "the draft is empty",
            Reason::TooLong => "the stripped draft is longer than 160 code points",
            Reason::NoAckPattern => "no ack pattern matches the lowered draft",
            Reason::PatternAborted => "an ack pattern hit the backtracking limit (treated as FIRE)",
            Reason::TrivialAck => "a trivial acknowledgement with no floor: the critic is skipped",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of reasons, iterated in declaration order.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Reasons(u16);

impl Reasons {
    pub const EMPTY: Reasons = Reasons(0);

    pub fn insert(&mut self, r: Reason) {
        self.0 |= 1 << r as u8;
    }

    pub fn remove(&mut self, r: Reason) {
        self.0 &= !(1 << r as u8);
    }

    pub fn contains(self, r: Reason) -> bool {
        self.0 & (1 << r as u8) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The reasons in declaration order: bit `i` is [`Reason::ALL`]`[i]`,
    /// so the set bits, lowest first (a walk of every reason per row and
    /// tally showed in profiles).
    pub fn iter(self) -> impl Iterator<Item = Reason> {
        let mut bits = self.0;
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let i = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                Reason::ALL[i]
            })
        })
    }

    /// The only reason in the set, if there is exactly one.
    pub fn single(self) -> Option<Reason> {
        if self.len() == 1 {
            self.iter().next()
        } else {
            None
        }
    }
}

impl FromIterator<Reason> for Reasons {
    fn from_iter<I: IntoIterator<Item = Reason>>(it: I) -> Reasons {
        let mut s = Reasons::EMPTY;
        for r in it {
            s.insert(r);
        }
        s
    }
}

impl fmt::Display for Reasons {
    /// `intent;claims`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            f.write_str(r.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_iterates_in_declaration_order() {
        for (i, r) in Reason::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i, "{r:?}");
        }
        for bits in 0..1u16 << Reason::ALL.len() {
            let set = Reasons(bits);
            let want: Vec<Reason> = Reason::ALL
                .into_iter()
                .filter(|r| set.contains(*r))
                .collect();
            assert_eq!(set.iter().collect::<Vec<_>>(), want, "{bits:b}");
        }
    }

    #[test]
    fn names_round_trip_and_sets_print_in_order() {
        for r in Reason::ALL {
            assert_eq!(Reason::from_name(r.name()), Some(r));
        }
        let s: Reasons = [Reason::Claims, Reason::Intent].into_iter().collect();
        assert_eq!(s.to_string(), "intent;claims");
        assert_eq!(s.len(), 2);
        assert_eq!(s.single(), None);
    }
}
