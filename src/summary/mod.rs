//! The typed summary layer, below the report writers: each figure declared
//! once (`metrics`), the rounding every report shares (`numbers`), the
//! typed run and variant summaries that are summary.json (`figures`), and
//! their derivation from a replay's integer totals (`build`). `check`,
//! `diff`, `calibrate`, `mine` and the frontier read figures from here;
//! `report` writes them.

pub(crate) mod build;
pub(crate) mod figures;
pub(crate) mod frontier;
pub(crate) mod manifest;
pub(crate) mod metrics;
pub(crate) mod numbers;
pub(crate) mod parquet;
pub(crate) mod partial;
pub(crate) mod read;
pub(crate) mod schema;
pub(crate) mod text;
