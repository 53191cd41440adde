//! One integration-test binary driving the real `critic-gate` program.

mod util;

mod build;
mod calibrate;
mod charts;
mod check;
mod config;
mod costs;
mod deployment_axes;
mod derive;
mod diff;
mod docs;
mod explain;
mod exporters;
mod fuzz_check;
mod import;
mod init;
mod label_patterns;
mod merge;
mod mine;
mod monitor;
mod parquet_pages;
mod patterns;
mod plan;
mod production;
mod regressions;
mod replay;
mod schema;
mod scope_columns;
mod statistics;
mod sweep;
mod trace;
mod untrusted;
