//! The typed summary layer, below the report writers: each figure declared
//! once (`metrics`), the rounding every report shares (`numbers`), the
//! typed run and variant summaries that are summary.json (`figures`), and
//! their derivation from a replay's integer totals (`build`). `check`,
//! `diff`, `calibrate`, `mine` and the frontier read figures from here;
//! `report` writes them.

pub mod build;
pub mod figures;
pub mod frontier;
pub mod manifest;
pub mod metrics;
pub mod numbers;
pub mod parquet;
pub mod partial;
pub mod read;
pub mod schema;
pub mod text;
