//! One integration-test binary driving the real `critic-gate` program.

mod util;

mod adversarial;

mod build;
mod calibrate;
mod charts;
mod check;
mod costs;
mod derive;
mod explain;
mod exporters;
mod first_hour;
mod first_reading;
mod fuzz_check;
mod import;
mod import_review;
mod label_patterns;
mod merge;
mod mine;
mod production;
mod replay;
mod round_two;
mod schema;
mod scope_columns;
mod statistics;
mod sweep;
