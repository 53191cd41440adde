//! The signals symfonic derives from what a transcript holds, ported
//! exactly from symfonic-core 9.12.0, so that traffic recorded without them
//! (an OpenTelemetry trace, an OpenAI-style transcript) can be replayed:
//! the intent verdict (`IntentClassifier.classify`, [`intent`]) and the
//! fabrication findings (`detect_fabrication`, [`fabrication`]). The
//! Python text rules they rest on (NFC with CPython's Unicode, `repr`) are
//! in [`pytext`].

pub mod fabrication;
pub mod intent;
pub mod pytext;
