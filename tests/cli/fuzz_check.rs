//! The committed corpus of the one fuzz target that needs the whole tool
//! (`check`, on a damaged summary.json), replayed through its body; the
//! other targets' corpora are replayed by the core crate's tests.

use crate::util::root;

#[test]
fn check_corpus() {
    let dir = root().join("fuzz/corpus/check");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        critic_gate::fuzz::check(&std::fs::read(&path).unwrap());
        n += 1;
    }
    assert!(n > 0, "{}: no corpus", dir.display());
}
