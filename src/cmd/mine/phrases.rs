//! Drafts as phrases: normalising (lowercase, Unicode punctuation and
//! emoji stripped, whitespace collapsed), guessing a script, and the
//! greedy choice of the phrases that cover the most missed acks.

use std::collections::{BTreeMap, HashSet};

use crate::gate::py_lower;

/// Normalise a draft: lowercase as Python lowers, keep letters, marks,
/// digits and spaces (punctuation, symbols and emoji go), collapse
/// whitespace.
pub fn normalise(draft: &str) -> String {
    let lowered = py_lower(draft);
    let kept: String = lowered
        .chars()
        .map(|c| if keep(c) { c } else { ' ' })
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Letters, digits and combining marks (a Devanagari or Arabic word
/// keeps its vowel signs).
fn keep(c: char) -> bool {
    c.is_alphanumeric() || is_mark(c)
}

fn is_mark(c: char) -> bool {
    matches!(c as u32,
        0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x0610..=0x061A | 0x064B..=0x065F
        | 0x0900..=0x0903 | 0x093A..=0x094F | 0x0E31 | 0x0E34..=0x0E3A | 0x0E47..=0x0E4E
        | 0x3099..=0x309A | 0xFE20..=0xFE2F)
}

/// A writing system, guessed from the first letter of a draft where no
/// language was recorded.
pub fn script(text: &str) -> &'static str {
    let Some(c) = text.chars().find(|c| c.is_alphabetic()) else {
        return "none";
    };
    match c as u32 {
        0x0370..=0x03FF => "greek",
        0x0400..=0x052F => "cyrillic",
        0x0590..=0x05FF => "hebrew",
        0x0600..=0x06FF | 0x0750..=0x077F => "arabic",
        0x0900..=0x097F => "devanagari",
        0x0E00..=0x0E7F => "thai",
        0x3040..=0x30FF => "japanese",
        0x3400..=0x9FFF => "han",
        0xAC00..=0xD7AF | 0x1100..=0x11FF => "hangul",
        _ if c.is_ascii() || (c as u32) < 0x0250 => "latin",
        _ => "other",
    }
}

/// Whether a text is written without spaces between words (phrases are
/// then character n-grams).
pub fn unspaced(text: &str) -> bool {
    matches!(script(text), "japanese" | "han" | "thai")
}

/// The phrases of a normalised draft: runs of 1-3 words, or character
/// n-grams (2-4) for scripts without spaces; none with a digit.
pub fn phrases(normalised: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    if unspaced(normalised) {
        for word in normalised.split(' ') {
            let chars: Vec<char> = word.chars().collect();
            for n in 2..=4 {
                for w in chars.windows(n) {
                    out.insert(w.iter().collect());
                }
            }
        }
    } else {
        let words: Vec<&str> = normalised.split(' ').collect();
        for n in 1..=3 {
            for w in words.windows(n) {
                out.insert(w.join(" "));
            }
        }
    }
    // A phrase of function and courtesy words alone ("i you that", "das",
    // "ます") is no ack: a draft of them says nothing either way.
    out.retain(|p: &String| {
        !p.is_empty()
            && !p.chars().any(|c| c.is_numeric())
            && !p.split(' ').all(crate::gate::neutral::is_neutral)
    });
    out
}

/// A missed draft: how often, and what its critic calls cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Missed {
    pub turns: u64,
    /// Recorded critic cost in USD (0 where unpriced).
    pub usd: f64,
}

/// The phrases that cover the most of `drafts` (weighted by cost, else by
/// turns), greedily, each seen in at least `min_support` turns; at most
/// `max` of them.
pub fn cover(drafts: &BTreeMap<String, Missed>, min_support: u64, max: usize) -> Vec<String> {
    let priced = drafts.values().any(|m| m.usd > 0.0);
    let weight = |m: &Missed| if priced { m.usd } else { m.turns as f64 };
    let mut index: BTreeMap<String, Vec<&String>> = BTreeMap::new();
    for d in drafts.keys() {
        for p in phrases(d) {
            index.entry(p).or_default().push(d);
        }
    }
    index.retain(|_, ds| ds.iter().map(|d| drafts[*d].turns).sum::<u64>() >= min_support);
    let mut covered: HashSet<&String> = HashSet::new();
    let mut chosen = Vec::new();
    while chosen.len() < max {
        // The most uncovered weight; ties: the longer (more specific)
        // phrase, then by text.
        let best = index
            .iter()
            .map(|(p, ds)| {
                let w: f64 = ds
                    .iter()
                    .filter(|d| !covered.contains(*d))
                    .map(|d| weight(&drafts[*d]))
                    .sum();
                (p, w)
            })
            .filter(|(_, w)| *w > 0.0)
            .max_by(|a, b| {
                a.1.total_cmp(&b.1)
                    .then_with(|| a.0.chars().count().cmp(&b.0.chars().count()))
                    .then_with(|| b.0.cmp(a.0))
            });
        let Some((p, _)) = best else { break };
        let p = p.clone();
        covered.extend(index[&p].iter().copied());
        chosen.push(p);
    }
    chosen
}

/// Python `re.escape` of a phrase, words joined by `[\W_]+` (anything but
/// letters and digits, as normalising removed).
fn escape(phrase: &str) -> String {
    phrase
        .split(' ')
        .map(|w| {
            w.chars()
                .map(|c| match c {
                    '.' | '^' | '$' | '*' | '+' | '?' | '{' | '}' | '[' | ']' | '\\' | '|'
                    | '(' | ')' => format!("\\{c}"),
                    c => c.to_string(),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        // Normalising took out whatever stood between the words ("cheers,
        // mate!"): the pattern allows any of it back, not only spaces.
        .join("[\\W_]+")
}

/// One pattern in the style of the built-ins: `\b(a|b c)\b`, without `\b`
/// for scripts without spaces.
pub fn pattern(phrases: &[String]) -> String {
    let alts = phrases
        .iter()
        .map(|p| escape(p))
        .collect::<Vec<_>>()
        .join("|");
    match phrases.first().is_some_and(|p| unspaced(p)) {
        true => format!("({alts})"),
        false => format!("\\b({alts})\\b"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_normalise_and_split_into_phrases() {
        assert_eq!(normalise("  Grazie MILLE!! 🙏 "), "grazie mille");
        assert_eq!(normalise("Спасибо, понял."), "спасибо понял");
        assert_eq!(
            normalise("了解、ありがとうございます。"),
            "了解 ありがとうございます"
        );
        // "mille" alone is a courtesy word, no ack.
        let p = phrases("grazie mille");
        assert!(
            p.contains("grazie") && p.contains("grazie mille") && p.len() == 2,
            "{p:?}"
        );
        assert!(phrases("das").is_empty() && phrases("i you that").is_empty());
        assert!(!phrases("ます").contains("ます"));
        let p = phrases("了解です");
        assert!(p.contains("了解") && p.contains("了解です"));
        assert!(phrases("ok 3").iter().all(|p| !p.contains('3')));
        assert_eq!(script("спасибо"), "cyrillic");
        assert_eq!(script("好的"), "han");
    }

    #[test]
    fn the_cover_takes_the_phrase_of_most_weight_first() {
        let mut d = BTreeMap::new();
        for (t, n) in [
            ("grazie", 3),
            ("grazie mille", 2),
            ("va bene", 1),
            ("perfetto grazie", 1),
        ] {
            d.insert(t.to_string(), Missed { turns: n, usd: 0.0 });
        }
        assert_eq!(cover(&d, 5, 8), vec!["grazie"]);
        assert_eq!(cover(&d, 1, 8), vec!["grazie", "va bene"]);
        assert_eq!(
            pattern(&["grazie".into(), "va bene".into()]),
            "\\b(grazie|va[\\W_]+bene)\\b"
        );
        assert_eq!(pattern(&["了解".into()]), "(了解)");
    }
}
