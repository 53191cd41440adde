//! Where a run's partial result goes: a file (written beside its name,
//! never over an input or a report file, moved into place when the run
//! succeeds) or memory. The format itself is [`crate::summary::partial`].

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::summary::partial::PartialWriter;
use crate::Error;

/// A partial result being written to its sink.
pub(crate) type Writer = PartialWriter<Sink>;

/// Start writing a partial result into `sink`.
pub(crate) fn writer(sink: Sink) -> crate::Result<Writer> {
    let name = match &sink {
        Sink::File { path, .. } => path.display().to_string(),
        Sink::Memory(_) => "the partial result".to_string(),
    };
    PartialWriter::new(sink, name)
}

/// Finish the stream: the file is moved into place (or the bytes returned,
/// for a memory sink).
pub(crate) fn finish(w: Writer) -> crate::Result<Vec<u8>> {
    w.finish()?.close()
}

/// Remove the file of a run that failed.
pub(crate) fn discard(w: Writer) {
    if let Some(sink) = w.abandon() {
        sink.discard();
    }
}

/// Where a run's partial result is asked to go.
#[derive(Clone, Debug)]
pub enum PartialTarget {
    /// A file, written beside its name and moved into place when the run
    /// succeeds.
    File(PathBuf),
    /// Bytes handed back to the caller (the Python shard API).
    Memory,
}

impl PartialTarget {
    /// The sink, once the run's checks have passed (a run refused early
    /// leaves no file); never one of the run's `sources` nor anything but a
    /// regular file (`/dev/null` stays a device).
    pub fn open(&self, sources: &[String], out: Option<&Path>) -> crate::Result<Sink> {
        match self {
            PartialTarget::Memory => Ok(Sink::Memory(Vec::new())),
            PartialTarget::File(path) => Sink::file(path, sources, out),
        }
    }

    /// Why the run cannot write its partial result there (checked before
    /// anything is read or written), if it cannot.
    pub fn refusal(&self, sources: &[String], out: Option<&Path>) -> Option<Error> {
        match self {
            PartialTarget::Memory => None,
            PartialTarget::File(path) => Sink::refusal(path, sources, out),
        }
    }
}

/// Whether the file at `path` opens as a partial result (of any version),
/// or is empty.
fn is_partial_or_empty(path: &Path) -> bool {
    let Ok(f) = File::open(path) else {
        return false;
    };
    if f.metadata().is_ok_and(|m| m.len() == 0) {
        return true;
    }
    crate::summary::partial::is_partial(f)
}

/// A run killed outright (SIGKILL, a lost machine) leaves its temporary
/// file `.NAME.PID.tmp` beside the target: the next run to the same target
/// removes those whose process is gone (where `/proc` says so).
fn remove_stale_temporaries(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let pid = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Where a partial result goes: a file (written beside its name, then
/// renamed into place) or memory.
pub enum Sink {
    File {
        tmp: PathBuf,
        path: PathBuf,
        out: BufWriter<File>,
    },
    Memory(Vec<u8>),
}

impl Sink {
    /// A partial result never replaces an input, a file of the --out
    /// folder, or any file but an earlier partial result (or an empty one).
    fn refusal(path: &Path, sources: &[String], out: Option<&Path>) -> Option<Error> {
        let usage = |why: crate::options::Said| {
            Some(Error::Usage(crate::said![
                crate::vocab::Setting::Partial,
                format!(" {}: ", path.display()),
                why
            ]))
        };
        if let Some(s) = super::input_at(path, sources) {
            return usage(
                format!("is the input {s}; write the partial result to another file").into(),
            );
        }
        let Some(name) = path.file_name() else {
            return usage("give a file name".into());
        };
        let absolute = |p: &Path| {
            let p = std::path::absolute(p).ok()?;
            // The folder as it resolves when it exists (links, `..`).
            Some(std::fs::canonicalize(&p).unwrap_or(p))
        };
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if let (Some(out), Some(dir)) = (out.and_then(absolute), absolute(parent)) {
            let rel = dir.join(name);
            let rel = rel
                .strip_prefix(&out)
                .ok()
                .map(|r| r.to_string_lossy().into_owned());
            let ours = rel.is_some_and(|r| {
                r.starts_with("charts")
                    || r == crate::report::MARKER
                    || crate::report::report_files().any(|f| f == r)
            });
            if ours {
                return usage(crate::said!["is a file of the report written inside the ", crate::vocab::Setting::Out, format!(" folder {}, which the report replaces: give the partial result another name", out.display())]);
            }
        }
        if path.exists() && !path.is_file() {
            return usage("is not a regular file (a folder or a device); give a file name".into());
        }
        if path.is_file() && !is_partial_or_empty(path) {
            return usage(crate::said![
                "exists and is not a partial result: ",
                crate::vocab::Setting::Partial,
                " replaces only an earlier partial result; remove the file or choose another name"
            ]);
        }
        None
    }

    fn file(path: &Path, sources: &[String], out: Option<&Path>) -> crate::Result<Sink> {
        if let Some(e) = Sink::refusal(path, sources, out) {
            return Err(e);
        }
        let name = path.file_name().expect("refusal checks the file name");
        remove_stale_temporaries(path);
        let tmp = path.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let f = crate::report::create_new_file(&tmp).map_err(|e| {
            Error::Write(crate::Failure::caused(
                crate::said![
                    crate::vocab::Setting::Partial,
                    format!(" {}: {e}", path.display())
                ],
                e,
            ))
        })?;
        crate::report::track_temp(&tmp);
        Ok(Sink::File {
            tmp,
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, f),
        })
    }

    /// Move a finished file into place; the bytes of a memory sink.
    pub fn close(self) -> crate::Result<Vec<u8>> {
        match self {
            Sink::Memory(v) => Ok(v),
            Sink::File { tmp, path, out } => {
                let fail = |e: std::io::Error| {
                    let _ = std::fs::remove_file(&tmp);
                    crate::report::untrack_temp(&tmp);
                    Error::Write(
                        crate::said![
                            crate::vocab::Setting::Partial,
                            format!(" {}: {e}", path.display())
                        ]
                        .into(),
                    )
                };
                let f = out.into_inner().map_err(|e| fail(e.into_error()))?;
                f.sync_all().map_err(fail)?;
                std::fs::rename(&tmp, &path).map_err(fail)?;
                crate::report::untrack_temp(&tmp);
                Ok(Vec::new())
            }
        }
    }

    /// Remove what a failed run left.
    pub fn discard(self) {
        if let Sink::File { tmp, .. } = self {
            let _ = std::fs::remove_file(&tmp);
            crate::report::untrack_temp(&tmp);
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::File { out, .. } => out.write(buf),
            Sink::Memory(v) => v.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::File { out, .. } => out.flush(),
            Sink::Memory(_) => Ok(()),
        }
    }
}
