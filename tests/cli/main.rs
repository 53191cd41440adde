//! One integration-test binary driving the real `critic-gate` program.

mod util;

mod explain;
mod replay;
