//! Searching a mostly-ASCII haystack that has a few non-ASCII characters
//! (an accented name in a long answer) without `regex`'s slowest engine.
//!
//! `regex`'s lazy DFA cannot decide a Unicode `\b` next to a non-ASCII
//! byte, so on such a haystack the whole search falls back to the PikeVM.
//! When every match of the patterns is at most `L` bytes long, the search
//! splits exactly: a window of `L + 4` bytes around each non-ASCII
//! character, and the ASCII gaps between the windows, each widened by `L`
//! into its neighbours (searched with the DFA: every byte it reads,
//! context included, is ASCII). A match of at most `L` bytes that is not
//! inside a window starts at least 4 bytes past any non-ASCII character
//! and so lies inside a widened gap; every span is searched with the whole
//! haystack as context, so each answer is the full search's answer.
//!
//! A window is first searched by the DFA for the pattern without its word
//! boundaries (a match of the pattern is one of that, so most windows end
//! there), then, if that matches, by a bounded backtracker.

use regex_automata::meta::Regex;
use regex_automata::nfa::thompson::backtrack::{BoundedBacktracker, Cache};
use regex_automata::util::pool::Pool;
use regex_automata::Input;
use regex_syntax::hir::{Hir, Look};
use std::sync::OnceLock;

/// Windows larger than this share of the haystack: one plain search is
/// cheaper.
const MAX_WINDOW_SHARE: f64 = 0.8;
/// Patterns whose matches may be longer than this are not split.
const MAX_MATCH_BYTES: usize = 256;

/// The joined plain patterns, ready to search parts of a haystack.
pub(super) struct Windowed {
    re: Regex,
    /// The parsed pattern, for the window engines.
    hir: Hir,
    /// Built on the first window searched (most pattern sets never search
    /// one: compiling them for every set cost a short replay 13%).
    engines: OnceLock<WindowEngines>,
    /// The longest match, in bytes.
    max_len: usize,
}

/// What searches a window.
struct WindowEngines {
    /// The pattern with its word boundaries dropped, which the DFA runs
    /// on any text: every match of the pattern is one of it, so a window
    /// where it finds none needs no backtracking.
    loose: Option<Regex>,
    /// The pattern for the windows where `loose` matches. `regex`'s own
    /// choice there is its slowest engine (the PikeVM: its backtracker is
    /// kept to haystacks of 128 bytes, and the haystack is the whole
    /// text); the bounded backtracker visits each (state, byte) of a
    /// window at most once, a fraction of the PikeVM's work on these
    /// short spans.
    backtracker: Option<Backtracker>,
}

impl WindowEngines {
    fn new(hir: &Hir) -> WindowEngines {
        let loose = Regex::builder()
            .configure(meta_config())
            .build_from_hir(&without_word_boundaries(hir.clone()))
            .ok();
        WindowEngines {
            loose,
            backtracker: Backtracker::new(hir),
        }
    }
}

fn meta_config() -> regex_automata::meta::Config {
    regex_automata::meta::Config::new().nfa_size_limit(Some(64 << 20))
}

impl Windowed {
    /// None when a match may be longer than [`MAX_MATCH_BYTES`] (or
    /// unbounded), or the pattern does not build here.
    pub(super) fn new(pattern: &str) -> Option<Windowed> {
        let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
        let max_len = hir.properties().maximum_len()?;
        if max_len > MAX_MATCH_BYTES {
            return None;
        }
        let re = Regex::builder()
            .configure(meta_config())
            .build_from_hir(&hir)
            .ok()?;
        Some(Windowed {
            re,
            hir,
            engines: OnceLock::new(),
            max_len,
        })
    }

    /// Whether the patterns match `text`, or None when the windows would
    /// cover too much of it to be worth splitting.
    pub(super) fn is_match(&self, text: &str) -> Option<bool> {
        let windows = self.windows(text)?;
        let in_window = windows.iter().any(|&(lo, hi)| self.window(text, lo, hi));
        Some(
            in_window
                || self
                    .gaps(text, &windows)
                    .any(|(lo, hi)| self.span(text, lo, hi)),
        )
    }

    fn span(&self, text: &str, lo: usize, hi: usize) -> bool {
        lo < hi && self.re.is_match(Input::new(text).span(lo..hi))
    }

    /// [`Windowed::span`] for a window: with the backtracker when the
    /// window fits its memory bound.
    fn window(&self, text: &str, lo: usize, hi: usize) -> bool {
        let engines = self.engines.get_or_init(|| WindowEngines::new(&self.hir));
        if let Some(loose) = &engines.loose {
            if !loose.is_match(Input::new(text).span(lo..hi)) {
                return false;
            }
        }
        match &engines.backtracker {
            Some(b) if hi - lo < b.engine.max_haystack_len() => {
                let input = Input::new(text).span(lo..hi).earliest(true);
                b.engine
                    .try_is_match(&mut b.caches.get(), input)
                    .unwrap_or_else(|_| self.span(text, lo, hi))
            }
            _ => self.span(text, lo, hi),
        }
    }

    /// The merged windows around the non-ASCII characters, on character
    /// boundaries.
    fn windows(&self, text: &str) -> Option<Vec<(usize, usize)>> {
        let reach = self.max_len + 4;
        let bytes = text.as_bytes();
        let mut windows: Vec<(usize, usize)> = Vec::new();
        let mut i = 0;
        while let Some(off) = bytes[i..].iter().position(|b| !b.is_ascii()) {
            let p = i + off;
            let q = p + text[p..].chars().next().map_or(1, char::len_utf8);
            let lo = floor_boundary(text, p.saturating_sub(reach));
            let hi = ceil_boundary(text, (q + reach).min(text.len()));
            match windows.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => windows.push((lo, hi)),
            }
            i = q;
        }
        let covered: usize = windows.iter().map(|(lo, hi)| hi - lo).sum();
        (covered as f64 <= MAX_WINDOW_SHARE * text.len() as f64).then_some(windows)
    }

    /// The ASCII gaps between windows, each widened by the longest match
    /// into its neighbours (still ASCII, context byte included).
    fn gaps<'a>(
        &'a self,
        text: &'a str,
        windows: &'a [(usize, usize)],
    ) -> impl Iterator<Item = (usize, usize)> + 'a {
        let starts = std::iter::once(0).chain(windows.iter().map(|w| w.1));
        let ends = windows
            .iter()
            .map(|w| w.0)
            .chain(std::iter::once(text.len()));
        // An empty gap (a window at either end of the text) is skipped:
        // widened, it would lie inside that window, already searched, and
        // reach its non-ASCII bytes (where the DFA gives up).
        starts
            .zip(ends)
            .filter(|(lo, hi)| lo < hi)
            .map(move |(lo, hi)| {
                let lo = if lo == 0 { 0 } else { lo - self.max_len };
                (lo, (hi + self.max_len).min(text.len()).max(lo))
            })
    }
}

type NewCache =
    Box<dyn Fn() -> Cache + Send + Sync + std::panic::UnwindSafe + std::panic::RefUnwindSafe>;

/// A bounded backtracker and its scratch memory, one per thread.
struct Backtracker {
    engine: BoundedBacktracker,
    caches: Pool<Cache, NewCache>,
}

impl Backtracker {
    fn new(hir: &Hir) -> Option<Backtracker> {
        use regex_automata::nfa::thompson;
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().nfa_size_limit(Some(64 << 20)))
            .build_from_hir(hir)
            .ok()?;
        let engine = BoundedBacktracker::builder().build_from_nfa(nfa).ok()?;
        let for_pool = engine.clone();
        Some(Backtracker {
            engine,
            caches: Pool::new(Box::new(move || for_pool.create_cache())),
        })
    }
}

/// `hir` with every word-boundary assertion (`\\b`, `\\B` and their
/// kin) replaced by the empty pattern: a pattern that matches wherever
/// `hir` does (and more), and that the DFA runs on any text.
fn without_word_boundaries(hir: Hir) -> Hir {
    use regex_syntax::hir::{Capture, HirKind, Repetition};
    let each = |subs: Vec<Hir>| subs.into_iter().map(without_word_boundaries).collect();
    match hir.into_kind() {
        HirKind::Look(look) if is_word_look(look) => Hir::empty(),
        HirKind::Look(look) => Hir::look(look),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(without_word_boundaries(*r.sub)),
            ..r
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(without_word_boundaries(*c.sub)),
            ..c
        }),
        HirKind::Concat(subs) => Hir::concat(each(subs)),
        HirKind::Alternation(subs) => Hir::alternation(each(subs)),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
    }
}

/// Every look-around but the text and line anchors asks about words.
fn is_word_look(look: Look) -> bool {
    !matches!(
        look,
        Look::Start | Look::End | Look::StartLF | Look::EndLF | Look::StartCRLF | Look::EndCRLF
    )
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_only_bounded_patterns() {
        assert!(Windowed::new(r"(?i)\b(ok|got it)\b").is_some());
        assert!(Windowed::new(r"(?i)\bok.*").is_none());
    }

    #[test]
    fn a_gap_widened_into_a_window_finds_a_match_across_its_edge() {
        let w = Windowed::new(r"\bok\b").unwrap();
        // `ok` starts 8 bytes after `é` (a window reaches 2 + 4 past it) and
        // ends past the window: only the widened gap sees all of it.
        let text = format!("é{}ok{}", " ".repeat(5), " rest".repeat(10));
        assert_eq!(w.is_match(&text), Some(true));
        assert_eq!(w.is_match("éok"), None, "too short to split");
        let long = format!("{}é{}", "x ".repeat(20), " y".repeat(20));
        assert_eq!(w.is_match(&long), Some(false));
    }

    #[test]
    fn the_loose_pattern_matches_wherever_the_pattern_does_and_more() {
        let w = Windowed::new(r"(?i)\b(ok|got it)\B|^x\b").unwrap();
        let engines = WindowEngines::new(&w.hir);
        let loose = engines.loose.as_ref().unwrap();
        for text in ["okay", "book", "got it", "x", "xy"] {
            assert!(loose.is_match(text), "{text:?}");
        }
        // The text and line anchors stay.
        assert!(!loose.is_match("ax"));
    }

    #[test]
    fn a_window_at_either_end_leaves_no_gap_there() {
        let w = Windowed::new(r"\bok\b").unwrap();
        let text = format!("é{}ü", " x".repeat(30));
        let windows = w.windows(&text).unwrap();
        assert_eq!(windows.len(), 2);
        // Only the gap between the windows, widened: all ASCII.
        let gaps: Vec<_> = w.gaps(&text, &windows).collect();
        assert_eq!(gaps, [(windows[0].1 - 2, windows[1].0 + 2)]);
        assert!(gaps.iter().all(|&(lo, hi)| text[lo..hi].is_ascii()));
    }

    /// The built-in ack patterns as `PySet` joins them.
    fn builtins() -> String {
        crate::gate::BUILTIN_ACK_PATTERNS
            .iter()
            .map(|p| format!("(?:{})", super::super::translate(p, true).unwrap().native))
            .collect::<Vec<_>>()
            .join("|")
    }

    fn piece() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("ok".to_string()),
            Just("got it".to_string()),
            Just("natürlich".to_string()),
            Just("bien sûr".to_string()),
            Just("you're welcome".to_string()),
            Just("é".to_string()),
            Just("ſ".to_string()),
            Just("ı".to_string()),
            Just("日本".to_string()),
            Just("\u{301}".to_string()),
            Just(" ".to_string()),
            Just(", ".to_string()),
            Just(" ".repeat(7)),
            "[a-z ]{1,30}",
            // Long ASCII stretches, so that most texts are split.
            "[a-z ]{40,120}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(2000))]

        /// Split or not, the answer is the full search's.
        #[test]
        fn splitting_never_changes_the_answer(
            parts in proptest::collection::vec(piece(), 0..40),
        ) {
            // Compiled once for all cases (per case, compiling was most of
            // the library tests' time).
            static ENGINES: std::sync::OnceLock<(Windowed, regex::Regex)> =
                std::sync::OnceLock::new();
            let (w, full) = ENGINES.get_or_init(|| {
                let joined = builtins();
                (Windowed::new(&joined).unwrap(), regex::Regex::new(&joined).unwrap())
            });
            let text = parts.concat();
            if let Some(split) = w.is_match(&text) {
                proptest::prop_assert_eq!(split, full.is_match(&text), "{:?}", text);
            }
        }
    }
}
