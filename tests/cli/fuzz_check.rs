//! The committed corpus of the one fuzz target that needs the whole tool
//! (`check`, on a damaged summary.json), replayed through its body; the
//! other targets' corpora are replayed by the core crate's tests.

use crate::util::root;

#[test]
fn check_corpus() {
    let dir = root().join("fuzz/corpus/check");
    let (mut n, mut judged) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        judged += usize::from(critic_gate::fuzz::check(&std::fs::read(&path).unwrap()));
        n += 1;
    }
    assert!(n > 0, "{}: no corpus", dir.display());
    // Inputs of this schema version reach the verdict (a corpus of old
    // versions only tests the refusal); regenerate the seeds with
    // scripts/fuzz-check-seeds.sh after a schema change.
    assert!(
        judged >= 2,
        "only {judged} of {n} corpus inputs were judged"
    );
}
