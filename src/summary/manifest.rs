//! A report folder's manifest: the marker file names every file the run
//! moved into place and its size, and says while the moves are under way.
//! `check` and `diff` read a folder only when its manifest is complete and
//! every file it names is there at its size, so a run killed during its
//! moves, or a file of another run put beside this one's, is refused
//! rather than judged as one replay (#47 item 11).

use std::fmt::Write as _;
use std::path::Path;

/// The file that marks a folder as a critic-gate report folder and holds
/// its manifest.
pub const MARKER: &str = ".critic-gate-report";

/// The marker's first line, what a reader of the folder sees (and all of
/// the marker of a folder `calibrate` or `mine` writes).
pub const MARKER_TEXT: &str =
    "This folder holds a critic-gate report; `critic-gate replay --out` may replace its report files.\n";

/// The line that says the run was moving its files into place.
const MOVING: &str = "report: moving files into place";

/// The line that opens a complete manifest.
const COMPLETE: &str = "report: complete";

/// The marker of a folder with no report yet, or whose report files a
/// run is moving into place: a folder left so is refused by readers.
pub fn moving() -> String {
    format!("{MARKER_TEXT}{MOVING}\n")
}

/// The marker of a folder whose report is whole: each `(name, bytes)`.
pub fn complete<'a>(files: impl Iterator<Item = (&'a str, u64)>) -> String {
    let mut text = format!("{MARKER_TEXT}{COMPLETE}\n");
    for (name, bytes) in files {
        let _ = writeln!(text, "{bytes}\t{name}");
    }
    text
}

/// `dir` share-locked for reading (`None` where the file system has no
/// locks), or why not: a run is writing its reports into it now.
pub fn lock_shared(dir: &Path) -> Result<Option<std::fs::File>, String> {
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
pub fn verify(dir: &Path) -> Result<(), String> {
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
        let (bytes, name) = line
            .split_once('\t')
            .and_then(|(b, n)| Some((b.parse::<u64>().ok()?, n)))
            .ok_or_else(|| {
                format!(
                    "{}: a line of the manifest is not `bytes<TAB>file` ({:?}); the folder is damaged: replay the traffic again",
                    marker.display(),
                    super::text::excerpt(line, 80)
                )
            })?;
        let at = dir.join(name);
        match std::fs::metadata(&at) {
            Ok(m) if m.len() == bytes => {}
            Ok(m) => {
                return Err(format!(
                    "{}: {} bytes, but the run that wrote the folder made it {bytes}: the file was edited or comes from another run; replay the traffic again",
                    at.display(),
                    m.len()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_holds_its_files_to_their_sizes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.csv"), "abc").unwrap();
        std::fs::create_dir(d.path().join("charts")).unwrap();
        std::fs::write(d.path().join("charts/x.svg"), "<svg/>").unwrap();
        let put = |t: String| std::fs::write(d.path().join(MARKER), t).unwrap();
        put(complete([("a.csv", 3), ("charts/x.svg", 6)].into_iter()));
        assert_eq!(verify(d.path()), Ok(()));
        put(moving());
        assert!(verify(d.path()).unwrap_err().contains("stopped while"));
        put(complete([("a.csv", 4)].into_iter()));
        assert!(verify(d.path()).unwrap_err().contains("3 bytes"));
        put(complete([("b.csv", 4)].into_iter()));
        assert!(verify(d.path()).unwrap_err().contains("incomplete"));
        put(format!("{}\nrubbish", complete(std::iter::empty())));
        assert!(verify(d.path()).unwrap_err().contains("damaged"));
        // An older folder's marker (its first line alone) is read as before.
        put(MARKER_TEXT.to_string());
        assert_eq!(verify(d.path()), Ok(()));
    }
}
