//! A report folder's manifest: the marker file names every file the run
//! moved into place with its size and content hash (XXH3-64), and says
//! while the moves are under way.
//! `check` and `diff` read a folder only when its manifest is complete and
//! every file it names is there as written, so a run killed during its
//! moves, or a file of another run put beside this one's (even of the
//! same size), is refused rather than judged as one replay (#47 item 11).
//! A folder without its marker (copied without hidden files) is judged
//! on the cross-checks between its files alone.

use std::fmt::Write as _;
use std::path::Path;

/// The file that marks a folder as a critic-gate report folder and holds
/// its manifest.
pub(crate) const MARKER: &str = ".critic-gate-report";

/// The marker's first line, what a reader of the folder sees (and all of
/// the marker of a folder `calibrate` or `mine` writes).
pub(crate) const MARKER_TEXT: &str =
    "This folder holds a critic-gate report; `critic-gate replay --out` may replace its report files.\n";

/// The line that says the run was moving its files into place.
const MOVING: &str = "report: moving files into place";

/// The line that opens a complete manifest.
const COMPLETE: &str = "report: complete";

/// The marker of a folder with no report yet, or whose report files a
/// run is moving into place: a folder left so is refused by readers.
pub(crate) fn moving() -> String {
    format!("{MARKER_TEXT}{MOVING}\n")
}

/// The marker of a folder whose report is whole: each file's name and
/// [`digest`].
pub(crate) fn complete<'a>(files: impl Iterator<Item = (&'a str, (u64, u64))>) -> String {
    let mut text = format!("{MARKER_TEXT}{COMPLETE}\n");
    for (name, (bytes, hash)) in files {
        let _ = writeln!(text, "{bytes}\t{hash:016x}\t{name}");
    }
    text
}

/// A file's size and XXH3-64 hash, read through once (about 10 GB/s).
pub(crate) fn digest(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok((bytes, h.digest()));
        }
        h.update(&buf[..n]);
        bytes += n as u64;
    }
}

/// `dir` share-locked for reading (`None` where the file system has no
/// locks), or why not: a run is writing its reports into it now.
pub(crate) fn lock_shared(dir: &Path) -> Result<Option<std::fs::File>, String> {
    let Ok(f) = std::fs::File::open(dir) else {
        return Ok(None);
    };
    match f.try_lock_shared() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "{}: a critic-gate run is writing its reports into this folder now; judge it once that run has finished",
            dir.display()
        )),
        Err(std::fs::TryLockError::Error(_)) => Ok(None),
    }
}

/// Why a folder's files cannot be read as one report.
pub(crate) fn verify(dir: &Path) -> Result<(), String> {
    let marker = dir.join(MARKER);
    let Ok(text) = std::fs::read_to_string(&marker) else {
        // A folder without a marker, or written before manifests: the
        // cross-checks between its files are all there is.
        return Ok(());
    };
    let mut lines = text.lines().skip_while(|l| !l.starts_with("report: "));
    match lines.next() {
        None => return Ok(()),
        Some(COMPLETE) => {}
        Some(_) => {
            return Err(format!(
                "{}: a run was stopped while it moved its reports into place, so the folder may mix the files of two runs; replay the traffic again",
                dir.display()
            ))
        }
    }
    for line in lines {
        let (bytes, hash, name) = entry(line).ok_or_else(|| {
            format!(
                "{}: a line of the manifest is not `bytes<TAB>hash<TAB>file` ({:?}); the folder is damaged: replay the traffic again",
                marker.display(),
                super::text::excerpt(line, 80)
            )
        })?;
        let at = dir.join(name);
        match digest(&at) {
            Ok(d) if d == (bytes, hash) => {}
            Ok((n, _)) => {
                return Err(format!(
                    "{}: {n} bytes of other content than the {bytes} the run that wrote the folder made: the file was edited or comes from another run; replay the traffic again",
                    at.display(),
                ))
            }
            Err(e) => {
                return Err(format!(
                    "{}: the run that wrote the folder made this file, and it cannot be read ({e}): the folder is incomplete; replay the traffic again",
                    at.display()
                ))
            }
        }
    }
    Ok(())
}

/// A manifest line: bytes, hash and the file's name.
fn entry(line: &str) -> Option<(u64, u64, &str)> {
    let mut parts = line.splitn(3, '\t');
    let bytes = parts.next()?.parse().ok()?;
    let hash = u64::from_str_radix(parts.next()?, 16).ok()?;
    Some((bytes, hash, parts.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_holds_its_files_to_their_contents() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.csv"), "abc").unwrap();
        std::fs::create_dir(d.path().join("charts")).unwrap();
        std::fs::write(d.path().join("charts/x.svg"), "<svg/>").unwrap();
        let of = |name: &str| digest(&d.path().join(name)).unwrap();
        let (a, x) = (of("a.csv"), of("charts/x.svg"));
        let put = |t: String| std::fs::write(d.path().join(MARKER), t).unwrap();
        put(complete([("a.csv", a), ("charts/x.svg", x)].into_iter()));
        assert_eq!(verify(d.path()), Ok(()));
        // Another content of the same size (another run's file).
        std::fs::write(d.path().join("a.csv"), "abd").unwrap();
        assert!(verify(d.path()).unwrap_err().contains("other content"));
        std::fs::write(d.path().join("a.csv"), "abc").unwrap();
        put(moving());
        assert!(verify(d.path()).unwrap_err().contains("stopped while"));
        put(complete([("a.csv", (4, a.1))].into_iter()));
        assert!(verify(d.path()).unwrap_err().contains("3 bytes"));
        put(complete([("b.csv", a)].into_iter()));
        assert!(verify(d.path()).unwrap_err().contains("incomplete"));
        put(format!("{}\nrubbish", complete(std::iter::empty())));
        assert!(verify(d.path()).unwrap_err().contains("damaged"));
        // An older folder's marker (its first line alone) is read as before.
        put(MARKER_TEXT.to_string());
        assert_eq!(verify(d.path()), Ok(()));
    }
}
