//! The output folder: what `replay --out` may write into, and a staging
//! folder inside it that is moved into place only when the whole run
//! succeeded (and removed on failure or a signal), so a failed run never
//! leaves a half-written or partial report.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::Error;

/// The file that marks a folder as a critic-gate report folder: `replay`
/// writes into a non-empty folder only when it has one (or with `--force`).
/// It holds the report's manifest ([`manifest`]).
pub(crate) use crate::summary::manifest::MARKER;
use crate::summary::manifest::{self, MARKER_TEXT};

/// The prefix of a run's staging folder (followed by its process id).
const STAGING_PREFIX: &str = ".critic-gate-partial-";

/// What `replay --out DIR` may not do: write over an input, or scatter
/// report files among files that are not an earlier report.
pub(crate) fn check_out_dir(dir: &Path, sources: &[String], force: bool) -> crate::Result<()> {
    if !dir.exists() {
        // A link to a missing folder: creating the folder fails with "File
        // exists", which says nothing of why.
        if let Ok(to) = fs::read_link(dir) {
            return Err(Error::Usage(crate::said![crate::vocab::Setting::Out, format!(" {}: a symbolic link to {}, which does not exist; make that folder first, or give another folder", dir.display(), to.display())]));
        }
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(Error::Usage(crate::said![
            crate::vocab::Setting::Out,
            format!(" {}: not a folder", dir.display())
        ]));
    }
    // A folder the tool cannot inspect is one it could not write into.
    let canon = fs::canonicalize(dir).map_err(|e| {
        Error::Write(crate::Failure::caused(
            crate::said![
                crate::vocab::Setting::Out,
                format!(" {}: cannot inspect the folder: {e}", dir.display())
            ],
            e,
        ))
    })?;
    for s in sources.iter().filter(|s| *s != "-") {
        if fs::canonicalize(s).is_ok_and(|p| p.starts_with(&canon)) {
            return Err(Error::Usage(crate::said![crate::vocab::Setting::Out, format!(" {} contains the input {s}: the reports could overwrite or remove it; write them into another folder", dir.display())]));
        }
    }
    if force || dir.join(MARKER).is_file() {
        return Ok(());
    }
    let foreign = fs::read_dir(dir)
        .map_err(|e| {
            Error::Write(crate::Failure::caused(
                crate::said![
                    crate::vocab::Setting::Out,
                    format!(" {}: cannot list the folder: {e}", dir.display())
                ],
                e,
            ))
        })?
        .filter_map(Result::ok)
        .find(|e| !e.file_name().to_string_lossy().starts_with(STAGING_PREFIX));
    match foreign {
        None => Ok(()),
        Some(e) => Err(Error::Usage(crate::said![crate::vocab::Setting::Out, format!(" {}: the folder is not empty ({} and maybe more) and holds no earlier critic-gate report (no {MARKER} file): choose a new or empty folder, or pass ", dir.display(), e.file_name().to_string_lossy()), crate::vocab::Setting::Force, " to write the report files among what is there"])),
    }
}

/// The staging folder of the run in progress (and the output folder when
/// the run created it), so a signal handler can remove them; held locked
/// while the reports are moved into place.
static IN_PROGRESS: Mutex<Option<(PathBuf, Option<PathBuf>)>> = Mutex::new(None);

/// Files a run writes beside their final name (a partial result), removed
/// on a signal like the staging folder.
static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Create `tmp`, a temporary file to be moved into place, as a new file:
/// whatever stands at that name (a stale file, or a link planted to
/// redirect the write out of the folder) is removed, never opened, and
/// the file is created only if nothing stands there then (`O_EXCL`, which
/// follows no link: a name planted again in between is an error, not a
/// write elsewhere).
pub(crate) fn create_new_file(tmp: &Path) -> std::io::Result<File> {
    match fs::symlink_metadata(tmp) {
        Ok(m) if m.is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a folder stands at the temporary file's name",
            ))
        }
        Ok(_) => fs::remove_file(tmp)?,
        Err(_) => {}
    }
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
}

/// A file written whole or not at all: streamed to a temporary name beside
/// it (tracked, so a signal removes it) and moved into place by
/// [`WholeFile::finish`]; dropped unfinished, the temporary file is
/// removed.
pub(crate) struct WholeFile {
    tmp: PathBuf,
    path: PathBuf,
    w: Option<std::io::BufWriter<File>>,
}

impl WholeFile {
    /// Start `path` at `tmp` (beside it).
    pub(crate) fn create(path: &Path, tmp: PathBuf) -> std::io::Result<WholeFile> {
        track_temp(&tmp);
        let f = create_new_file(&tmp).inspect_err(|_| untrack_temp(&tmp))?;
        Ok(WholeFile {
            tmp,
            path: path.to_path_buf(),
            // Large writes: a copy of the traffic is as big as the traffic.
            w: Some(std::io::BufWriter::with_capacity(1 << 20, f)),
        })
    }

    pub(crate) fn writer(&mut self) -> &mut std::io::BufWriter<File> {
        self.w
            .as_mut()
            .expect("a WholeFile writes until it is finished")
    }

    /// Flush, sync and move into place.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        let w = self.w.take().expect("finished once");
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&self.tmp, &self.path)?;
        untrack_temp(&self.tmp);
        Ok(())
    }
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        if self.w.take().is_some() || fs::symlink_metadata(&self.tmp).is_ok() {
            let _ = fs::remove_file(&self.tmp);
        }
        untrack_temp(&self.tmp);
    }
}

/// A hidden file beside `path` (`.NAME.suffix`): where a whole file is
/// written before it is moved into place, or a lock on it.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{suffix}"))
}

/// Remove `path` if a signal ends the process before [`untrack_temp`].
pub(crate) fn track_temp(path: &Path) {
    TEMP_FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.to_path_buf());
}

/// `path` was moved into place or removed.
pub(crate) fn untrack_temp(path: &Path) {
    TEMP_FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| p != path);
}

/// Remove the staging folder of the run in progress, if any, and exit
/// with `code` (a signal is ending the process). A commit under way
/// finishes first; the lock is held until the exit, so none starts after.
pub fn abandon_in_progress_and_exit(code: i32) -> ! {
    for f in TEMP_FILES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain(..)
    {
        let _ = fs::remove_file(f);
    }
    let mut g = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((tmp, created)) = g.take() {
        // The run's other threads may be creating a file in the staging
        // folder while it is removed (the removal then fails, not empty):
        // try again until it is gone. Files are never created in a
        // removed staging folder (nothing makes it again).
        for _ in 0..200 {
            if fs::remove_dir_all(&tmp).is_ok() || !tmp.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if let Some(dir) = created {
            let _ = fs::remove_dir(dir);
        }
    }
    std::process::exit(code)
}

/// Whether process `pid` is alive (no procfs: assumed alive, so nothing
/// of a live run is ever removed).
fn alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// Remove the staging folders that runs killed before they could clean up
/// (SIGKILL, power loss) left in `dir`.
fn remove_stale_staging(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix(STAGING_PREFIX))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| p != std::process::id() && !alive(p)) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Each staged file's size and XXH3-64 as written, by its name in the
/// report folder: the manifest's figures without reading the files back
/// (a 121 MB decisions.csv read back and hashed cost 7% of a replay).
type Sums = Arc<Mutex<BTreeMap<String, (u64, u64)>>>;

/// A staged file that hashes what is written to it, in the order it
/// reaches the file; its size and hash are the report's when it is
/// dropped (after its buffer is flushed into it).
pub(crate) struct Staged {
    file: File,
    name: String,
    bytes: u64,
    hash: Box<xxhash_rust::xxh3::Xxh3>,
    sums: Sums,
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let digest = (self.bytes, self.hash.digest());
        self.sums
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(std::mem::take(&mut self.name), digest);
    }
}

/// A staged file's writer.
pub(super) type StagedWriter = BufWriter<Staged>;

/// The output folder and its staging area.
pub(crate) struct Staging {
    pub dir: PathBuf,
    pub tmp: PathBuf,
    /// The output folder did not exist before this run.
    created: bool,
    /// The output folder, locked (exclusively) for as long as this run
    /// may write into it: a second run into the same folder is refused,
    /// and `check` and `diff` (a shared lock) wait for no half-moved
    /// report.
    _lock: File,
    /// What each staged file was written as (see [`Staged`]).
    sums: Sums,
}

impl Staging {
    pub(crate) fn create(dir: &Path) -> crate::Result<Staging> {
        // Held while the folders are made: a signal waits, then finds them
        // registered (a signal between making the staging folder and
        // registering it left the folder behind).
        let mut in_progress = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        let created = !dir.exists();
        let tmp = dir.join(format!("{STAGING_PREFIX}{}", std::process::id()));
        *in_progress = Some((tmp.clone(), created.then(|| dir.to_path_buf())));
        let made = Staging::make(dir, &tmp);
        if made.is_err() {
            *in_progress = None;
        }
        drop(in_progress);
        let lock = match made {
            Ok(lock) => lock,
            Err(e) => {
                if created {
                    let _ = fs::remove_dir(dir);
                }
                return Err(e);
            }
        };
        Ok(Staging {
            dir: dir.to_path_buf(),
            tmp,
            created,
            _lock: lock,
            sums: Sums::default(),
        })
    }

    /// Make the output folder (if needed), lock it, and make a fresh
    /// staging folder in it.
    fn make(dir: &Path, tmp: &Path) -> crate::Result<File> {
        fs::create_dir_all(dir).map_err(|e| {
            Error::Write(crate::Failure::caused(
                format!("{}: cannot create the output folder: {e}", dir.display()),
                e,
            ))
        })?;
        let lock = lock_folder(dir)?;
        remove_stale_staging(dir);
        let _ = fs::remove_dir_all(tmp);
        fs::create_dir(tmp).map_err(|e| {
            Error::Write(crate::Failure::caused(
                format!("{}: cannot create a staging folder: {e}", tmp.display()),
                e,
            ))
        })?;
        Ok(lock)
    }

    pub(crate) fn file(&self, name: &str) -> crate::Result<(PathBuf, StagedWriter)> {
        let p = self.tmp.join(name);
        // A file in a report subfolder (`charts/...`): the subfolder is
        // made, never the staging folder itself (a signal may have removed
        // it; making it again left it behind).
        if let Some(parent) = p.parent().filter(|d| *d != self.tmp && !d.exists()) {
            fs::create_dir(parent).map_err(|e| {
                Error::Write(crate::Failure::caused(
                    format!("{}: {e}", parent.display()),
                    e,
                ))
            })?;
        }
        let staged = |file| Staged {
            file,
            name: name.to_string(),
            bytes: 0,
            hash: Box::default(),
            sums: self.sums.clone(),
        };
        File::create(&p)
            .map(|f| (p.clone(), BufWriter::with_capacity(1 << 20, staged(f))))
            .map_err(|e| Error::Write(crate::Failure::caused(format!("{}: {e}", p.display()), e)))
    }

    /// Move every staged file into the output folder, replacing the old
    /// report; the `known` report files this run did not write are removed.
    pub(crate) fn commit(self, known: impl Iterator<Item = String>) -> crate::Result<()> {
        // A signal waits for the moves to finish.
        let mut in_progress = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        let failed = |e: std::io::Error| {
            Error::Write(crate::Failure::caused(
                format!(
                    "{}: cannot move the reports into place: {e}",
                    self.dir.display()
                ),
                e,
            ))
        };
        if let Err(e) = self.subfolders_are_own() {
            *in_progress = None;
            let _ = fs::remove_dir_all(&self.tmp);
            return Err(e);
        }
        // From here until the manifest is written, the folder says that
        // its files are being moved: a run killed in between leaves a
        // folder readers refuse, never one that mixes two runs' files.
        put(&self.dir, MARKER, manifest::moving().as_bytes())?;
        let mut written: Vec<String> = Vec::new();
        for entry in fs::read_dir(&self.tmp).map_err(failed)? {
            let entry = entry.map_err(failed)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.path().is_dir() {
                fs::rename(entry.path(), self.dir.join(&name)).map_err(failed)?;
                written.push(name);
                continue;
            }
            // A report subfolder: its files move one by one, so files of
            // others in an existing folder of that name stay.
            fs::create_dir_all(self.dir.join(&name)).map_err(failed)?;
            for f in fs::read_dir(entry.path()).map_err(failed)? {
                let f = f.map_err(failed)?;
                let rel = format!("{name}/{}", f.file_name().to_string_lossy());
                fs::rename(f.path(), self.dir.join(&rel)).map_err(failed)?;
                written.push(rel);
            }
        }
        for name in known {
            // Never through a link: a file in a subfolder that is one is
            // left where it is.
            let through_link = Path::new(&name)
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .is_some_and(|p| is_link(&self.dir.join(p)));
            if !written.contains(&name) && !through_link {
                let _ = fs::remove_file(self.dir.join(name));
            }
        }
        written.sort();
        // As written (every staged file's writer is dropped by now), else
        // read back (a file staged by other means).
        let sums = std::mem::take(&mut *self.sums.lock().unwrap_or_else(|e| e.into_inner()));
        let sizes = written
            .iter()
            .map(|name| match sums.get(name) {
                Some(d) => Ok((name.as_str(), *d)),
                None => Ok((name.as_str(), manifest::digest(&self.dir.join(name))?)),
            })
            .collect::<std::io::Result<Vec<_>>>()
            .map_err(failed)?;
        put(
            &self.dir,
            MARKER,
            manifest::complete(sizes.into_iter()).as_bytes(),
        )?;
        *in_progress = None;
        fs::remove_dir_all(&self.tmp).map_err(failed)
    }

    /// Every report subfolder this run stages is, in the output folder, a
    /// folder of its own or absent: one planted as a link (or a file)
    /// would take the reports' files to its target, so the commit is
    /// refused before anything moves (the staged files are dropped).
    fn subfolders_are_own(&self) -> crate::Result<()> {
        let Ok(entries) = fs::read_dir(&self.tmp) else {
            return Ok(());
        };
        for entry in entries.flatten().filter(|e| e.path().is_dir()) {
            let at = self.dir.join(entry.file_name());
            let own = match fs::symlink_metadata(&at) {
                Ok(m) => m.is_dir(),
                Err(_) => true,
            };
            if !own {
                return Err(Error::Write(crate::Failure::new(format!(
                    "{}: is a symbolic link or not a folder; critic-gate writes its reports' subfolder there as a folder of its own and never through a link: remove it and run again",
                    at.display()
                ))));
            }
        }
        Ok(())
    }

    /// Drop everything staged (the run failed), and the output folder too
    /// if this run created it (only while empty: nothing else is touched).
    pub(crate) fn abandon(self) {
        *IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let _ = fs::remove_dir_all(&self.tmp);
        if self.created {
            let _ = fs::remove_dir(&self.dir);
        }
    }
}

/// A write error naming the file (a full disk is exit 2 with the path).
pub(super) fn write_error(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", path.display()),
            e,
        ))
    }
}

/// Take `dir` as the output folder of a job that writes its own files and
/// report subfolders (`calibrate`, `mine`): new, empty, or that job's
/// earlier folder (its marker), never one holding an input or another
/// kind of report (a replay's `summary.json` beside the job's files would
/// be judged by `check` as if it were this run's).
pub(crate) fn claim_job_dir(
    dir: &Path,
    sources: &[String],
    job: &str,
    force: bool,
) -> crate::Result<()> {
    check_out_dir(dir, sources, force)?;
    if dir.join("summary.json").is_file() {
        return Err(Error::Usage(crate::said![crate::vocab::Setting::Out, format!(" {}: holds a replay's report (summary.json); {job} writes a folder of its own: choose another", dir.display())]));
    }
    fs::create_dir_all(dir)
        .map_err(|e| Error::Write(crate::Failure::caused(format!("{}: {e}", dir.display()), e)))?;
    put(dir, MARKER, MARKER_TEXT.as_bytes())
}

/// Run `job` into `dir`; when it fails and `dir` did not exist before, the
/// folder it made goes (nothing half-written stays).
pub(crate) fn or_remove_new<T>(
    dir: &Path,
    job: impl FnOnce() -> crate::Result<T>,
) -> crate::Result<T> {
    let new = !dir.exists();
    let r = job();
    if r.is_err() && new {
        let _ = fs::remove_dir_all(dir);
    }
    r
}

/// Write one file whole or not at all: into a temporary name beside it,
/// then renamed (for the files `calibrate` and `mine` write outside a
/// replay's staging folder).
pub(crate) fn put(out: &Path, name: &str, bytes: &[u8]) -> crate::Result<()> {
    let path = out.join(name);
    let tmp = out.join(format!(".{name}.partial"));
    let fail = |e: std::io::Error| {
        let _ = fs::remove_file(&tmp);
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", path.display()),
            e,
        ))
    };
    let mut f = create_new_file(&tmp).map_err(fail)?;
    std::io::Write::write_all(&mut f, bytes).map_err(fail)?;
    fs::rename(&tmp, &path).map_err(fail)
}

/// `dir` locked for this run's writes ([`Staging`]), or why not: another
/// run holds it.
fn lock_folder(dir: &Path) -> crate::Result<File> {
    let f = File::open(dir).map_err(|e| {
        Error::Write(crate::Failure::caused(
            format!("{}: cannot open the output folder: {e}", dir.display()),
            e,
        ))
    })?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(fs::TryLockError::WouldBlock) => Err(Error::Usage(crate::said![crate::vocab::Setting::Out, format!(" {}: another critic-gate run is writing its reports into this folder; wait for it to finish, or choose another folder", dir.display())])),
        // A file system without locks: the run goes on unlocked, as
        // before locks were taken.
        Err(fs::TryLockError::Error(_)) => Ok(f),
    }
}

/// Whether `p` is a symbolic link (not followed).
fn is_link(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    /// A link planted at a temporary file's name (`.NAME.PID.tmp` is
    /// predictable) is removed, never written through: `File::create`
    /// truncated and filled its target (#47 item 10).
    #[cfg(unix)]
    #[test]
    fn a_planted_link_at_a_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let tmp = dir.path().join(".out.jsonl.1234.tmp");
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        let mut f = super::create_new_file(&tmp).unwrap();
        std::io::Write::write_all(&mut f, b"ours").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&tmp).unwrap().is_file());
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "ours");
        // `put` (calibrate's and mine's files) likewise: `.NAME.partial`.
        let planted = dir.path().join(".mine.json.partial");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        super::put(dir.path(), "mine.json", b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("mine.json")).unwrap(),
            "{}"
        );
        // A folder there is an error, not removed.
        let folder = dir.path().join(".d.tmp");
        std::fs::create_dir(&folder).unwrap();
        assert!(super::create_new_file(&folder).is_err());
        assert!(folder.is_dir());
    }
}
