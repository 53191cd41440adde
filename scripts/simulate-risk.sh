#!/usr/bin/env bash
# The risk simulations of #33 at the replicate counts their guarantees are
# stated at (cargo test runs them smaller): clustered verdicts (bound
# coverage, 1,000 replicates a setting; calibrate's family-wise error, 400),
# labels missing where the critic fails (200), labels missing by confidence
# through the program (50 sweeps), and mine's eight near-budget patterns.
# and (#44) docs/ci.md's recipe and mine under a critic that fails where
# it would revise, the certificate's coverage on rare long, heavy-tailed
# and few runs (1,000 replicates a case), and the power price in runs.
# Each prints its figures; any that misses its guarantee fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export CRITIC_GATE_SIM_FULL=1
cargo test --release --locked --lib calibrate::simulation -- --nocapture --test-threads 1 2>&1 |
  grep -E "clustering|clustered|unequal|critic fails|case 1|test result|panicked"
cargo test --release --locked --lib mine:: -- --nocapture --test-threads 1 2>&1 |
  grep -E "mine|test result|panicked"
cargo test --release --locked --lib check::simulation -- --nocapture --test-threads 1 2>&1 |
  grep -E "ci recipe|coverage|heavy|power|only runs|test result|panicked"
cargo test --release --locked --test cli label_patterns -- --nocapture 2>&1 |
  grep -E "MNAR|test result|panicked"
# (#45) plan's labels for 80% power on clustered, weekday-swinging skips.
cargo test --release --locked --lib plan::simulation -- --nocapture --test-threads 1 2>&1 |
  grep -E "plan simulation|test result|panicked"
# (#45) the design bound's coverage of a window's realised rate on
# production's skips: one and unequal probabilities, clustered
# conversations, failures at random and informative.
cargo test --release --locked --lib design::simulation -- --nocapture --test-threads 1 2>&1 |
  grep -E "design coverage|test result|panicked"
# (#46) monitor: 90 daily looks, 2,000 replicates a setting: the anytime
# bounds' coverage of the realised rate, false `above` at R, false
# `certified` at 1.5R, the change alarm against its designed level, its
# median delay against plan's prediction, and with no regression the day
# it certifies against plan's; the naive daily looks beside; (#63) the
# status under shadow calls that fail where the critic would revise. On real
# traffic: scripts/monitor_real_traffic.py TASKMASTER4_DATA_DIR.
cargo test --release --locked --lib monitor::simulation -- --nocapture --test-threads 1 2>&1 |
  grep -E "one probability|unequal|test result|panicked"
