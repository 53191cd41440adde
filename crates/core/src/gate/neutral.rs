//! Words that say nothing beyond an ack: function words and courtesy
//! words of the languages the built-in ack patterns know (and Italian and
//! Japanese endings). An ack's share of a draft ([`super::Gate::ack_cover`])
//! leaves them out of the count, so "Thank you so much for your patience."
//! is all ack, while "Sure, but refunds are closed" is not: negations and
//! contrasts ("not", "but", "aber", "pero", "mais", "ma", "mas") are never
//! neutral, nor are digits. `mine` refuses a phrase made only of them.

/// Lowered, sorted (checked by a test), so a binary search finds a word.
const NEUTRAL: &[&str] = &[
    "a",
    "again",
    "all",
    "am",
    "an",
    "and",
    "are",
    "as",
    "be",
    "beaucoup",
    "c",
    "com",
    "con",
    "d",
    "das",
    "de",
    "del",
    "der",
    "di",
    "die",
    "do",
    "e",
    "el",
    "en",
    "es",
    "est",
    "et",
    "for",
    "für",
    "geschehen",
    "have",
    "help",
    "i",
    "ihr",
    "ihre",
    "il",
    "is",
    "it",
    "its",
    "l",
    "la",
    "las",
    "le",
    "les",
    "ll",
    "lo",
    "los",
    "lot",
    "m",
    "me",
    "mille",
    "molto",
    "much",
    "muchas",
    "mucho",
    "muito",
    "my",
    "o",
    "of",
    "os",
    "our",
    "para",
    "patience",
    "per",
    "por",
    "pour",
    "re",
    "really",
    "s",
    "sehr",
    "seu",
    "so",
    "su",
    "sua",
    "suo",
    "sus",
    "t",
    "tante",
    "that",
    "the",
    "thing",
    "this",
    "time",
    "to",
    "too",
    "très",
    "un",
    "una",
    "und",
    "une",
    "us",
    "ve",
    "very",
    "vielen",
    "vos",
    "votre",
    "we",
    "will",
    "with",
    "y",
    "you",
    "your",
    "ございます",
    "です",
    "ました",
    "ます",
];

/// Whether `word` (lowered) is a function or courtesy word.
pub fn is_neutral(word: &str) -> bool {
    NEUTRAL.binary_search(&word).is_ok()
}

/// Negations and contrasts, lowered and sorted: outside the matched ack
/// one of them says the draft is more than an ack ("Thanks, we will not
/// refund you"; "Sure, but ..."), whatever share the ack covers. "n't"
/// is found apart (its `t` after an apostrophe).
const NEGATIONS: &[&str] = &[
    "aber",
    "although",
    "but",
    "cannot",
    "cant",
    "except",
    "however",
    "jamais",
    "kein",
    "keine",
    "leider",
    "ma",
    "mais",
    "mas",
    "nada",
    "never",
    "nicht",
    "no",
    "nobody",
    "non",
    "none",
    "not",
    "nothing",
    "nunca",
    "não",
    "pas",
    "pero",
    "però",
    "sin",
    "though",
    "unfortunately",
    "unless",
    "without",
    "не",
    "нет",
    "но",
];

/// Negation or contrast characters of scripts written without spaces.
const NEGATION_CHARS: &[char] = &['不', '没', '沒', '但', '無', '无', '非', '않', '못', '없'];

/// Whether `word` (lowered), or a character of it in a script written
/// without spaces, negates or contrasts.
pub fn is_negation(word: &str) -> bool {
    NEGATIONS.contains(&word) || word.chars().any(|c| NEGATION_CHARS.contains(&c))
}

#[cfg(test)]
mod tests {
    #[test]
    fn negations_are_sorted_and_none_is_neutral() {
        assert!(
            super::NEGATIONS.windows(2).all(|w| w[0] < w[1]),
            "sort NEGATIONS"
        );
        for w in super::NEGATIONS {
            assert!(!super::is_neutral(w), "{w}");
        }
    }

    #[test]
    fn the_list_is_sorted_and_holds_no_negation() {
        assert!(
            super::NEUTRAL.windows(2).all(|w| w[0] < w[1]),
            "sort NEUTRAL"
        );
        for w in [
            "no",
            "not",
            "but",
            "aber",
            "nicht",
            "pero",
            "mais",
            "pas",
            "ma",
            "mas",
            "não",
            "non",
            "never",
            "cannot",
            "unfortunately",
        ] {
            assert!(!super::is_neutral(w), "{w}");
        }
    }
}
