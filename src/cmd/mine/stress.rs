//! `--stress`: a metamorphic test of every skipped draft. Short content a
//! critic should review is added (a negation, a question, a policy
//! statement, a claim) and the gate decides again; the counts of skips
//! that survive show its blind spots. A transformation that adds a claim
//! (a number, a name) must turn every skip into a fire: a surviving skip
//! would be a bug in the port.

use std::borrow::Cow;

use serde::Serialize;

use crate::gate::Gate;
use crate::read::turn::Turn;

/// One transformation of a draft.
#[derive(Clone, Copy, Debug)]
pub struct Transform {
    pub name: &'static str,
    /// Added text; `{}` is the draft.
    pub template: &'static str,
    /// It adds a claim: no skip may survive it.
    pub adds_claim: bool,
}

pub const TRANSFORMS: [Transform; 7] = [
    Transform {
        name: "append_negation",
        template: "{} but I can't do that",
        adds_claim: false,
    },
    Transform {
        name: "prepend_negation",
        template: "no, {}",
        adds_claim: false,
    },
    Transform {
        name: "append_question",
        template: "{} can you confirm your address?",
        adds_claim: false,
    },
    Transform {
        name: "append_policy",
        template: "{} refunds are no longer possible on this plan",
        adds_claim: false,
    },
    Transform {
        name: "append_number",
        template: "{} your order 48213 ships friday",
        adds_claim: true,
    },
    Transform {
        name: "append_amount",
        template: "{} that is $40",
        adds_claim: true,
    },
    Transform {
        name: "append_name",
        template: "{} Anna Berg will call you",
        adds_claim: true,
    },
];

/// Per transformation: skips tested, and skips that survived.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stress {
    pub tested: u64,
    pub survived: Vec<u64>,
}

impl Stress {
    /// Decide `turn` again under each transformation of its draft.
    pub fn test(&mut self, turn: &Turn, gate: &Gate, transforms: &[Transform]) {
        if self.survived.len() < transforms.len() {
            self.survived.resize(transforms.len(), 0);
        }
        self.tested += 1;
        for (i, t) in transforms.iter().enumerate() {
            let mut changed = turn.clone();
            changed.draft = Cow::Owned(t.template.replace("{}", &turn.draft));
            if !gate.evaluate(&changed).fires() {
                self.survived[i] += 1;
            }
        }
    }

    /// Skips a claim-adding transformation left (must be 0).
    pub fn claim_survivors(&self) -> u64 {
        TRANSFORMS
            .iter()
            .zip(&self.survived)
            .filter(|(t, _)| t.adds_claim)
            .map(|(_, n)| n)
            .sum()
    }
}
