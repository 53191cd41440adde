//! Reading traffic: sources into blocks of lines ([`reader`]), lines into
//! validated turns ([`turn`], with the fast JSON reader in [`json`] and
//! serde_json as the authority), and the recorded activation log reduced
//! as symfonic reduces it ([`activation`]).
//!
//! Nothing here knows about gates, variants or reports.

pub mod activation;
pub mod invalid;
pub mod json;
pub mod provenance;
pub mod reader;
pub mod rfc3339;
pub mod turn;
