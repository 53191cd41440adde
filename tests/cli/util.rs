//! A small harness for driving the real `critic-gate` binary.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

/// A scratch folder for one test, removed when dropped.
pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

/// The project root (for datasets/ and reports/).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The program under test: this build's, or another one named by
/// `CRITIC_GATE_TEST_BIN` (to show that a new test fails on an old build).
pub fn cmd() -> Command {
    match std::env::var_os("CRITIC_GATE_TEST_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_critic-gate")),
    }
}

/// Run with `args` and optional stdin; return the output.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = cmd();
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = c.spawn().unwrap();
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    child.wait_with_output().unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert an exit code, showing both streams on failure.
pub fn expect_code(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// Assert an exit code and that stderr says `says`, showing it otherwise.
pub fn expect_error(o: &Output, code: i32, says: &str) {
    expect_code(o, code);
    assert!(
        stderr(o).contains(says),
        "expected {says:?} in:\n{}",
        stderr(o)
    );
}

/// The records of a replay's rejects.jsonl.
pub fn rejects(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("rejects.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `critic-gate replay ARGS --out DIR`, run from the project root.
pub fn replay_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut c = cmd();
    c.current_dir(root())
        .arg("replay")
        .args(args)
        .arg("--out")
        .arg(dir);
    c.output().unwrap()
}

/// `critic-gate ARGS --out DIR` (the command first), run from the
/// project root.
pub fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut c = cmd();
    c.current_dir(root()).args(args).arg("--out").arg(dir);
    c.output().unwrap()
}

/// Every file of a report folder, subfolders (`charts/`) included, as
/// sorted relative paths.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            out.extend(files_in(&p).into_iter().map(|f| format!("{name}/{f}")));
        } else {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// A replay's summary.json.
pub fn summary(dir: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// The rows of a CSV text as maps from column name to field.
pub fn csv_rows(text: &str) -> Vec<HashMap<String, String>> {
    // The datasets' CSV fields used here contain no quotes or commas.
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            let fields = csv_fields(l);
            header.iter().cloned().zip(fields).collect()
        })
        .collect()
}

/// The fields of one CSV line (quotes removed; no line breaks in fields).
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    fields.push(cur);
    fields
}

/// Equal JSON, numbers within `eps`.
pub fn close_within(a: &Value, b: &Value, eps: f64) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() <= eps
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close_within(a, b, eps))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| close_within(v, w, eps)))
        }
        _ => a == b,
    }
}

/// `critic-gate synth --turns TURNS --seed SEED` into `d/NAME`.
pub fn synth(d: &Dir, name: &str, turns: u64, seed: u64) -> PathBuf {
    let out = d.path(name);
    let (t, s) = (turns.to_string(), seed.to_string());
    let o = run(
        &[
            "synth",
            "--turns",
            &t,
            "--seed",
            &s,
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    expect_code(&o, 0);
    out
}

// Helpers of tests filed by subject from the review files (round two,
// adversarial, first hour, first reading).

pub const SEED: &str = "datasets/seed.jsonl";

/// A replay of `args` (run from the project root) into `d/name`; exit 0.
pub fn replayed(d: &Dir, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = d.path(name);
    let mut a = args.to_vec();
    a.push("--quiet");
    let o = replay_in(&out, &a);
    expect_code(&o, 0);
    out
}

/// The `variant` column of a CSV report, in row order, without repeats.
pub fn variant_column(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in csv_rows(text) {
        let v = r["variant"].clone();
        if out.last() != Some(&v) && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// Where stdin is a pipe: `calibrate` and `mine` would read it twice.
pub fn piped(args: &[&str]) -> std::process::Output {
    let input = std::fs::read(root().join(SEED)).unwrap();
    let mut c = cmd();
    c.current_dir(root()).args(args);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    // The command may refuse before it reads: a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(&input);
    child.wait_with_output().unwrap()
}

pub fn run_from_root(args: &[&str]) -> std::process::Output {
    cmd().current_dir(root()).args(args).output().unwrap()
}

/// A seed replay's summary.json, edited by `edit`, judged by `check`.
pub fn check_tampered(edit: impl Fn(&str) -> String, budget: &[&str]) -> std::process::Output {
    let d = Dir::new();
    let out = replayed(&d, "r", &[SEED, "--config", "datasets/gate.toml"]);
    let p = out.join("summary.json");
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    tamper(&p, edited);
    let mut args = vec!["check", out.to_str().unwrap()];
    args.extend(budget);
    run(&args, None)
}

/// `text` with the first `"key": value` (a whole number) replaced.
pub fn set_count(text: &str, key: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    fn walk(v: &mut serde_json::Value, key: &str, value: &serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if k == key {
                        *x = value.clone();
                    } else {
                        walk(x, key, value);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, key, value)),
            _ => {}
        }
    }
    let value: serde_json::Value = serde_json::from_str(value).unwrap();
    walk(&mut v, key, &value);
    serde_json::to_string_pretty(&v).unwrap()
}

/// A partial result of `file` replayed from `dir` (its name as given).
pub fn partial_from(dir: &std::path::Path, file: &str, out: &std::path::Path) {
    let o = cmd()
        .current_dir(dir)
        .args([
            "replay",
            file,
            "--partial",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .output()
        .unwrap();
    expect_code(&o, 0);
}

/// Run from the project root with stdout (or stderr) a pipe whose reading
/// end is closed at once, as `| true` or `| head -1` leave it.
pub fn run_with_closed(args: &[&str], close_stderr: bool) -> Option<i32> {
    let mut c = cmd();
    c.current_dir(root()).args(args).stdin(Stdio::null());
    if close_stderr {
        c.stdout(Stdio::null()).stderr(Stdio::piped());
    } else {
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    let mut child = c.spawn().unwrap();
    if close_stderr {
        drop(child.stderr.take());
    } else {
        drop(child.stdout.take());
    }
    let out = child.wait_with_output().unwrap();
    out.status.code()
}

pub fn staging_folders(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|it| {
            it.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".critic-gate-partial-"))
                .collect()
        })
        .unwrap_or_default()
}

/// `critic-gate ARGS` run from `dir`.
pub fn run_from(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    cmd().current_dir(dir).args(args).output().unwrap()
}

/// Every `.rs` file under `dir`.
pub fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

/// The targets of `[text](target)` links.
pub fn markdown_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        match after.find(')') {
            Some(j) => {
                out.push(after[..j].to_string());
                rest = &after[j..];
            }
            None => break,
        }
    }
    out
}

pub fn committed(path: &str) -> String {
    std::fs::read_to_string(root().join("reports").join(path)).unwrap()
}

/// Wait until `ready` (the run has started writing), send `signal`
/// (`-INT`, `-TERM`) to `child`, and return its exit code.
#[cfg(unix)]
pub fn signal_when(
    child: &mut std::process::Child,
    ready: impl Fn() -> bool,
    signal: &str,
) -> Option<i32> {
    let started = std::time::Instant::now();
    while !ready() {
        assert!(
            started.elapsed().as_secs() < 20,
            "the run never started writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    child.wait().unwrap().code()
}

/// Run with `args` (no stdin); its exit code and its peak resident memory
/// in MiB, from the kernel's account of the child (`wait4`), so a test can
/// hold a run to a memory budget without timing anything.
#[cfg(unix)]
pub fn run_measured(args: &[&str]) -> (Option<i32>, u64, String) {
    let mut c = cmd();
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into the two locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    std::mem::forget(child);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    // ru_maxrss is in KiB on Linux.
    (code, usage.ru_maxrss as u64 / 1024, err)
}

/// The seed dataset replayed `--format parquet` into `d`'s folder `only`.
pub fn parquet_replay_of_seed(d: &Dir) -> PathBuf {
    let only = d.path("only");
    let o = replay_in(
        &only,
        &[
            "datasets/seed.jsonl",
            "--config",
            "datasets/gate.toml",
            "--format",
            "parquet",
            "--quiet",
        ],
    );
    expect_code(&o, 0);
    only
}

/// The report folder `dir`'s manifest made to agree with its files as they
/// are now (the files it lists that are gone are left out): a test that
/// edits a report's files on purpose reaches the checks behind the
/// manifest's, as a folder crafted whole would.
pub fn reseal(dir: &Path) {
    let marker = dir.join(".critic-gate-report");
    let text = std::fs::read_to_string(&marker).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        match line.splitn(3, '\t').nth(2) {
            Some(name) => {
                if let Ok(bytes) = std::fs::read(dir.join(name)) {
                    let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
                    out.push_str(&format!("{}\t{hash:016x}\t{name}\n", bytes.len()));
                }
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    std::fs::write(marker, out).unwrap();
}

/// Write `contents` over the report file `path` on purpose (a test of
/// what `check` or `diff` make of an edited folder), its folder's
/// manifest made to agree ([`reseal`]).
pub fn tamper(path: &Path, contents: impl AsRef<[u8]>) {
    std::fs::write(path, contents).unwrap();
    reseal(path.parent().unwrap());
}
