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

/// The `parquet` target's committed corpus (our tables and copies with a
/// damaged page header or footer), replayed through its body: none
/// panics or aborts, the intact tables read, and the damaged ones do not.
#[test]
fn parquet_corpus() {
    let dir = root().join("fuzz/corpus/parquet");
    let (mut n, mut read) = (0, 0);
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let ok = critic_gate::fuzz::parquet(&std::fs::read(&path).unwrap());
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(ok, name.starts_with("intact-"), "{name}");
        read += usize::from(ok);
        n += 1;
    }
    assert!(n >= 10 && read >= 2, "{n} inputs, {read} read");
}

/// Writes the `parquet` target's seeds (run by hand after a change of the
/// tables' layout: `cargo test --release --test cli -- --ignored
/// write_parquet_fuzz_seeds`): the seed replay's tables, and copies of its
/// regressions table with one page header or the footer damaged.
#[test]
#[ignore]
fn write_parquet_fuzz_seeds() {
    use crate::parquet_pages::edit_page;
    use polars_parquet_format::PageType;
    let d = crate::util::Dir::new();
    let only = crate::util::parquet_replay_of_seed(&d);
    let out = root().join("fuzz/corpus/parquet");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for t in ["regressions", "segments", "summary"] {
        let bytes = std::fs::read(only.join(format!("{t}.parquet"))).unwrap();
        std::fs::write(out.join(format!("intact-{t}.parquet")), bytes).unwrap();
    }
    let good = std::fs::read(only.join("regressions.parquet")).unwrap();
    type Edit = fn(&mut polars_parquet_format::PageHeader);
    let edits: [(&str, PageType, Edit); 6] = [
        ("data-num-values-minus-1", PageType::DATA_PAGE, |h| {
            h.data_page_header.as_mut().unwrap().num_values = -1
        }),
        ("data-num-values-max", PageType::DATA_PAGE, |h| {
            h.data_page_header.as_mut().unwrap().num_values = i32::MAX
        }),
        ("data-compressed-max", PageType::DATA_PAGE, |h| {
            h.compressed_page_size = i32::MAX
        }),
        ("data-uncompressed-minus-1", PageType::DATA_PAGE, |h| {
            h.uncompressed_page_size = -1
        }),
        ("dict-uncompressed-max", PageType::DICTIONARY_PAGE, |h| {
            h.uncompressed_page_size = i32::MAX
        }),
        ("dict-num-values-max", PageType::DICTIONARY_PAGE, |h| {
            h.dictionary_page_header.as_mut().unwrap().num_values = i32::MAX
        }),
    ];
    for column in ["variant", "draft"] {
        for (name, kind, edit) in &edits {
            if let Some(bytes) = edit_page(&good, column, *kind, edit) {
                std::fs::write(out.join(format!("{column}-{name}.parquet")), bytes).unwrap();
            }
        }
    }
    // The footer: its length past the file, and cut in the middle.
    let mut long = good.clone();
    let n = long.len();
    long[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(out.join("footer-length-past-the-file.parquet"), long).unwrap();
    let mut cut = good[..good.len() - 40].to_vec();
    cut.extend_from_slice(&good[good.len() - 8..]);
    std::fs::write(out.join("footer-cut.parquet"), cut).unwrap();
}

/// The `partial` target's committed corpus (decompressed partial results
/// of two replays, and copies with a formula planted in a row or the
/// stream cut), merged through its body: the intact ones merge, the
/// damaged ones are refused, none panics. Regenerate the seeds with
/// scripts/fuzz-check-seeds.sh after a change of the tallies.
#[test]
fn partial_corpus() {
    let dir = root().join("fuzz/corpus/partial");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let merged = critic_gate::fuzz::partial(&std::fs::read(&path).unwrap());
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(merged, !name.starts_with("damaged-"), "{name}");
        n += 1;
    }
    assert!(n >= 4, "{n} inputs");
}

/// The `markdown` target's committed corpus (line breaks, `::error`
/// lines, escape sequences, bidirectional controls, separators, links)
/// through its body.
#[test]
fn markdown_corpus() {
    let dir = root().join("fuzz/corpus/markdown");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        critic_gate::fuzz::markdown(&std::fs::read(entry.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n >= 5, "{n} inputs");
}

/// 300 seeded mutations of the seed's partial result (bytes overwritten,
/// a span repeated, the stream cut) through the `partial` target's body,
/// for a run of the fuzzer's kind on every `cargo test`: none panics, and
/// whatever merges holds only rows a replay writes.
#[test]
fn partial_mutations() {
    let good = std::fs::read(root().join("fuzz/corpus/partial/seed")).unwrap();
    let mut rng = critic_gate::internals::SplitMix(11);
    let mut below = |n: usize| ((rng.next() * n as f64) as usize).min(n - 1);
    let mut merged = 0;
    for _ in 0..300 {
        let mut bytes = good.clone();
        match below(3) {
            0 => {
                for _ in 0..1 + below(8) {
                    let i = below(bytes.len());
                    bytes[i] = b",\"\n=+-@'x0"[below(10)];
                }
            }
            1 => {
                let (a, len) = (below(bytes.len()), 1 + below(400));
                let span = bytes[a..(a + len).min(bytes.len())].to_vec();
                let at = below(bytes.len());
                bytes.splice(at..at, span);
            }
            _ => bytes.truncate(below(bytes.len())),
        }
        merged += usize::from(critic_gate::fuzz::partial(&bytes));
    }
    eprintln!("{merged} of 300 mutations merged");
}
