//! `critic_gate._native`: the compiled half of the Python package. Each
//! function is a thin step over the library (the same code the CLI runs);
//! the Python half (`critic_gate/__init__.py`) turns report folders into
//! polars DataFrames. The GIL is released while the library works.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use critic_gate::cmd;
use critic_gate::options::{self, Decl, Given, KeywordError, Setting, Values};
use critic_gate::{Format, PartialInput, PartialTarget};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    critic_gate,
    CriticGateError,
    PyException,
    "A critic-gate error: the message names the file, the line and the reason (e.g. `traffic.jsonl:17: confidence must be a number in [0, 1]`)."
);

// One exception per kind of error, each a CriticGateError, so a caller
// can catch a bad line apart from a bad config or a failed write.
create_exception!(
    critic_gate,
    InvalidLineError,
    CriticGateError,
    "An invalid input line (strict mode): `source`, `line` and `reason` say which and why."
);
create_exception!(
    critic_gate,
    InputError,
    CriticGateError,
    "An input that could not be read (a missing file, a broken stream)."
);
create_exception!(
    critic_gate,
    ConfigError,
    CriticGateError,
    "An invalid config: a key, a value or a pattern."
);
create_exception!(
    critic_gate,
    UsageError,
    CriticGateError,
    "A request that cannot be carried out as given (an option's value, an output folder that holds an input)."
);
create_exception!(
    critic_gate,
    WriteError,
    CriticGateError,
    "A report that could not be written (the path and why)."
);
create_exception!(
    critic_gate,
    CannotJudgeError,
    CriticGateError,
    "A report folder that cannot be judged or compared."
);
create_exception!(
    critic_gate,
    SystemRefusedError,
    CriticGateError,
    "The operating system refused (a thread that cannot be started)."
);

/// The library's error as the exception of its kind (an invalid line
/// also carries its source, line and reason as attributes; a config error
/// its file and line, each or None, and its kind: unreadable, syntax, field
/// or value).
fn fail(e: critic_gate::Error) -> PyErr {
    use critic_gate::Error::*;
    // Each setting and budget the message names, as the keyword a Python
    // caller passed: the message carries them as data.
    let m = e.said().python();
    match e {
        InvalidLine {
            source,
            line,
            reason,
            ..
        } => Python::attach(|py| {
            let err = InvalidLineError::new_err(m);
            let v = err.value(py);
            let set = v
                .setattr("source", source)
                .and_then(|()| v.setattr("line", line))
                .and_then(|()| v.setattr("reason", reason.python()));
            set.err().unwrap_or(err)
        }),
        Read(f) => with_cause(InputError::new_err(m), &f),
        Config(c) => Python::attach(|py| {
            use critic_gate::config::ConfigErrorKind as K;
            let kind = match &c.kind {
                K::Unreadable(_) => "unreadable",
                K::Syntax(_) => "syntax",
                K::Field(_) => "field",
                K::Value(_) => "value",
            };
            let err = ConfigError::new_err(m);
            let v = err.value(py);
            let set = v
                .setattr("file", c.file)
                .and_then(|()| v.setattr("line", c.line))
                .and_then(|()| v.setattr("kind", kind));
            set.err().unwrap_or(err)
        }),
        Usage(_) => UsageError::new_err(m),
        Write(f) => with_cause(WriteError::new_err(m), &f),
        CannotJudge(_) => CannotJudgeError::new_err(m),
        System(f) => with_cause(SystemRefusedError::new_err(m), &f),
        // Raised only when the run saw a stop no signal asked for.
        Interrupted => PyKeyboardInterrupt::new_err(m),
    }
}

/// `threads=`: the run's own pool of that many worker threads (checked
/// as `--threads` is, when the pool is made), else the process's.
fn threads_of(flags: &Values) -> Option<usize> {
    flags
        .count(Setting::Threads)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// The caller's side of a run, as the library's `Progress` reads it: the
/// stop flag, and the run's own worker pool (`threads=`).
#[derive(Default)]
struct Stop {
    stop: std::sync::Arc<AtomicBool>,
    pool: Option<rayon::ThreadPool>,
}

impl Stop {
    /// The flag as a command's pass reads it (`plan`, `sample`, `labels`,
    /// `monitor`).
    fn pass(&self) -> critic_gate::cmd::Stop {
        critic_gate::cmd::Stop::of(self.stop.clone())
    }
}

impl critic_gate::Progress for Stop {
    fn update(&self, _: u64, _: u64) {}
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn pool(&self) -> Option<&rayon::ThreadPool> {
        self.pool.as_ref()
    }
}

/// A run a Ctrl-C stops as SIGINT stops the CLI's: the library works on a
/// thread of its own while this one, without the GIL but to look, checks
/// Python's signals every 50 ms. On one (KeyboardInterrupt, or what a
/// handler raised) it asks the run to stop, waits for it (a stopped run
/// removes what it staged and writes nothing) and raises that.
///
/// With `threads`, the replay evaluates its blocks on a pool of its own
/// of that many threads (checked as `--threads` is); else on the
/// process's.
fn interruptible<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    work: impl FnOnce(&Stop) -> T + Send,
) -> PyResult<T> {
    use std::sync::mpsc::RecvTimeoutError;
    let stop = Stop {
        stop: Default::default(),
        pool: threads.map(cmd::worker_pool).transpose().map_err(fail)?,
    };
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = &stop;
        std::thread::Builder::new()
            .name("critic-gate".into())
            // Not on the pool: the replay's consumer waits for its blocks
            // on this thread while the pool evaluates them (on a pool
            // thread, a pool of one would wait for itself).
            .spawn_scoped(s, move || {
                let _ = tx.send(work(stop));
            })
            .map_err(|e| {
                fail(critic_gate::Error::System(critic_gate::Failure::caused(
                    format!("cannot start the run's thread: {e}"),
                    e,
                )))
            })?;
        let mut rx = rx;
        loop {
            // The receiver goes to the wait and back (it is not Sync).
            let (got, back) = py.detach(move || {
                let got = rx.recv_timeout(std::time::Duration::from_millis(50));
                (got, rx)
            });
            rx = back;
            match got {
                Ok(done) => return Ok(done),
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        stop.stop.store(true, Ordering::Relaxed);
                        let _ = py.detach(move || rx.recv());
                        return Err(e);
                    }
                }
                // The run's thread panicked: the scope raises its panic.
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(PyRuntimeError::new_err(
                        "the run's thread ended without a result",
                    ))
                }
            }
        }
    })
}

/// `err` with the I/O error the read, write or thread failed with as its
/// `__cause__`: an `OSError` of the same errno (`FileNotFoundError`,
/// `PermissionError`, ...), so a caller can act on it.
fn with_cause(err: PyErr, f: &critic_gate::Failure) -> PyErr {
    if let Some(io) = f.io() {
        let os = match io.raw_os_error() {
            // OSError(errno, strerror) is the errno's own subclass.
            Some(code) => {
                let text = io.to_string();
                let strerror = text
                    .strip_suffix(&format!(" (os error {code})"))
                    .unwrap_or(&text);
                PyOSError::new_err((code, strerror.to_string()))
            }
            None => PyErr::from(std::io::Error::new(io.kind(), io.to_string())),
        };
        Python::attach(|py| err.set_cause(py, Some(os)));
    }
    err
}

/// An option's value that is not one of its names, as a usage error.
fn unknown(e: critic_gate::vocab::UnknownName) -> PyErr {
    fail(critic_gate::Error::Usage(e.into()))
}

/// The config of `replay` and `replay_partial`, given the same way by
/// both: `config`, a file's path, or `config_text`, its TOML text
/// (neither: symfonic's defaults).
fn config_of(config: Option<&str>, config_text: Option<String>) -> PyResult<cmd::Config> {
    match (config, config_text) {
        (Some(_), Some(_)) => Err(PyValueError::new_err(
            "give config (a file's path) or config_text (TOML text), not both",
        )),
        (None, Some(text)) => Ok(cmd::Config::Text(text)),
        (Some(path), None) if !Path::new(path).exists() && looks_like_toml(path) => {
            Err(PyValueError::new_err(format!(
                "config is a config file's path, and {:?} is no file but looks like TOML text: give it as config_text=",
                path.chars().take(40).collect::<String>()
            )))
        }
        (path, None) => Ok(path.map(PathBuf::from).into()),
    }
}

/// Whether a `config` that is no file was meant as TOML text.
fn looks_like_toml(s: &str) -> bool {
    s.is_empty() || s.contains('\n') || s.contains('=') || s.trim_start().starts_with('[')
}

/// A Python value as the library's declared options take it (a path
/// arrives as its text, a tuple as a list: the Python half sees to both).
/// Number-like values are taken as Python takes them: a bool (`numpy.bool_`
/// too), a whole number (anything with `__index__`: `numpy.int64`), a
/// number (anything with `__float__`: `numpy.float32`, `Fraction`), a
/// text, or a sequence of texts (a list, a tuple, a NumPy array).
fn given(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Given> {
    use pyo3::types::{PyBool, PyString};
    let type_name = v.get_type().name()?.to_string();
    if v.is_instance_of::<PyBool>() || type_name == "bool" || type_name == "bool_" {
        if let Ok(b) = v.extract::<bool>() {
            return Ok(Given::Bool(b));
        }
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Given::Text(v.extract()?));
    }
    if let Ok(n) = v.call_method0("__index__") {
        return match n.extract::<i128>() {
            Ok(n) => Ok(Given::Int(n)),
            // Beyond i128: said as given, refused as out of range.
            Err(_) => Ok(Given::Huge(n.str()?.to_string())),
        };
    }
    if v.hasattr("__float__")? {
        if let Ok(x) = v.extract::<f64>() {
            return Ok(Given::Float(x));
        }
    }
    if let Ok(l) = v.extract::<Vec<String>>() {
        return Ok(Given::List(l));
    }
    if v.hasattr("__len__")? && v.hasattr("__iter__")? {
        return Err(PyTypeError::new_err(format!(
            "{name}: give a list of names (str)"
        )));
    }
    Err(PyTypeError::new_err(format!(
        "{name}: a {} is not a value any option takes",
        v.get_type().name()?
    )))
}

/// The settings `replay` takes as parameters of its own, and a shard
/// (`replay_partial`) not at all: not keywords of either.
const OWN_PARAMETERS: &[Setting] = &critic_gate::cmd::stubs::OWN_PARAMETERS;

/// The keyword arguments a job was given, split: those `decls` declares,
/// read and checked by their declarations into [`Values`] (the one keyword
/// reader: the command line's flags are the same declarations), and the
/// rest, each one of the job's `own` keywords. A keyword left at None
/// takes its default.
fn declared<'py>(
    decls: &'static [&'static Decl],
    options: Option<&Bound<'py, PyDict>>,
    own: &'static [&'static str],
    not_keywords: &[Setting],
) -> PyResult<(Values, Kwargs<'py>)> {
    let mut mine = Vec::new();
    let mut rest = Vec::new();
    let keyword = |d: &&&Decl| d.python && !not_keywords.contains(&d.setting);
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        let ours = decls
            .iter()
            .any(|d| keyword(&d) && d.setting.keyword() == k);
        match (ours, v.is_none()) {
            (true, true) => {}
            (true, false) => mine.push((k.clone(), given(&k, &v)?)),
            (false, _) if own.contains(&k.as_str()) => rest.push((k, v)),
            (false, _) => {
                let mut known: Vec<String> = own.iter().map(|o| o.to_string()).collect();
                known.extend(decls.iter().filter(keyword).map(|d| d.setting.keyword()));
                return Err(PyTypeError::new_err(
                    options::Unknown { given: k, known }.to_string(),
                ));
            }
        }
    }
    let values = Values::read(decls, mine).map_err(|e| match e {
        KeywordError::Unknown(u) => PyTypeError::new_err(u.to_string()),
        KeywordError::Refused(r) => refused(r),
    })?;
    Ok((
        values,
        Kwargs {
            given: rest,
            known: own,
        },
    ))
}

/// The replay `options` (keyword arguments) ask for, as the command
/// line's `replay` builds it: its checks are the request's own. An unknown
/// option is an error naming the known ones.
fn replay_request(
    sources: Vec<String>,
    config: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<cmd::replay::Request> {
    let (flags, k) = declared(options::REPLAY, options, &["config_text"], OWN_PARAMETERS)?;
    let request = cmd::replay::Request {
        sources,
        config: config_of(config, k.get("config_text")?)?,
        out: None,
        partial: None,
        source_bytes: None,
        flags,
    };
    // Refused before any work, as the command line refuses it.
    critic_gate::validate_group_by(&request.flags.list(Setting::GroupBy).unwrap_or_default())
        .map_err(fail)?;
    Ok(request)
}

/// A run's label: any text but the empty one (as `--label`); by default
/// the output folder's name, as on the command line.
fn label(label: Option<&str>, out: &Path) -> PyResult<String> {
    match label {
        Some(l) => match checked(&options::LABEL, Given::Text(l.to_string()))? {
            options::Value::Text(t) => Ok(t),
            v => unreachable!("a text option holds {v:?}"),
        },
        None => Ok(critic_gate::default_label(out)),
    }
}

/// The tables' format, checked as `--format` is.
fn format(name: &str) -> PyResult<Format> {
    checked(&options::FORMAT, Given::Text(name.to_string()))?;
    name.parse::<Format>().map_err(unknown)
}

/// A value of a parameter the Python function takes as its own (`label`,
/// `format`), checked by the option's declaration.
fn checked(d: &'static Decl, value: Given) -> PyResult<options::Value> {
    d.check(value).map_err(refused)
}

/// A declared option's refusal as Python raises it: a wrong type as
/// `TypeError`, a value out of range as `UsageError`, the setting spelled
/// as the caller's keyword.
fn refused(r: options::Refusal) -> PyErr {
    match r.wrong_type {
        true => PyTypeError::new_err(r.render(Setting::keyword)),
        false => UsageError::new_err(r.render(Setting::keyword)),
    }
}

/// Replay `paths` into the report folder `out` (written as `replay
/// --out` writes it).
#[pyfunction]
#[pyo3(signature = (paths, out, config=None, label=None, format="both", **options))]
fn replay(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    config: Option<&str>,
    label: Option<&str>,
    format: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "paths: give at least one traffic file",
        ));
    }
    let mut request = replay_request(paths, config, options)?;
    let threads = threads_of(&request.flags);
    let label = self::label(label, &out)?;
    request
        .flags
        .set(Setting::Label, options::Value::Text(label));
    let format = self::format(format)?;
    request
        .flags
        .set(Setting::Format, options::Value::Name(format.name()));
    request.out = Some(out);
    interruptible(py, threads, |stop| cmd::replay::run(&request, stop))?
        .map(|done| done.outcome.cautions())
        .map_err(fail)
}

/// The partial result of one shard: `data` (JSON Lines, plain, gzip or
/// zstd) read as the file `source`, replayed under `config` (a file's
/// path) or `config_text` (its TOML text), as `replay` takes them.
#[pyfunction]
#[pyo3(signature = (data, source, config=None, **options))]
fn replay_partial<'py>(
    py: Python<'py>,
    data: &[u8],
    source: String,
    config: Option<&str>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut request = replay_request(vec![source], config, options)?;
    let threads = threads_of(&request.flags);
    request.partial = Some(PartialTarget::Memory);
    request.source_bytes = Some(Arc::from(data));
    let done =
        interruptible(py, threads, |stop| cmd::replay::run(&request, stop))?.map_err(fail)?;
    Ok(PyBytes::new(py, &done.partial))
}

/// One partial result: its bytes, or the path of its file (read as the
/// merge goes, so files of any size merge in bounded memory).
fn partial_input(i: usize, item: &Bound<'_, PyAny>) -> PyResult<PartialInput> {
    // Bytes first: a path may be given as bytes too, but a partial result
    // is never that short.
    if let Ok(bytes) = item.extract::<Vec<u8>>() {
        return Ok(PartialInput::Memory {
            name: format!("partials[{i}]"),
            bytes: Arc::from(bytes),
        });
    }
    item.extract::<PathBuf>()
        .map(PartialInput::File)
        .map_err(|_| PyTypeError::new_err(format!("partials[{i}]: give bytes or a path")))
}

/// Merge shards' partial results (bytes or file paths), in order, into the
/// report folder `out` (the reports of one replay over all their files).
#[pyfunction]
#[pyo3(signature = (partials, out, **options))]
fn merge(
    py: Python<'_>,
    partials: Vec<Bound<'_, PyAny>>,
    out: PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let (flags, _) = declared(options::MERGE_OPTIONS, options, &[], &[])?;
    let inputs = partials
        .iter()
        .enumerate()
        .map(|(i, p)| partial_input(i, p))
        .collect::<PyResult<Vec<_>>>()?;
    if inputs.is_empty() {
        return Err(PyValueError::new_err(
            "partials: give at least one partial result",
        ));
    }
    let r = cmd::merge::Request::of(inputs, out, &flags);
    py.detach(|| cmd::merge::run(r))
        .map(|done| done.cautions())
        .map_err(fail)
}

/// How each variant of the config decides each turn of `turns` (JSON
/// lines, one turn a line, named `name` in messages) or of the file
/// `path`, and why: one JSON object a line, as `explain --json` prints.
#[pyfunction]
#[pyo3(signature = (turns, config=None, path=None, name="turn", **options))]
fn explain(
    py: Python<'_>,
    turns: Option<String>,
    config: Option<&str>,
    path: Option<PathBuf>,
    name: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (mut flags, _) = declared(options::EXPLAIN, options, &[], &[])?;
    let turn = match (turns, path) {
        (Some(text), None) => cmd::explain::Turns::Text {
            name: name.into(),
            text,
        },
        (None, Some(p)) => cmd::explain::Turns::File(p),
        _ => return Err(PyValueError::new_err("give turns or a path, not both")),
    };
    // Python reads the JSON (the terminal's readable trace is the CLI's).
    flags.set(Setting::Json, options::Value::Switch(true));
    let request = cmd::explain::Request::of(turn, config.map(PathBuf::from), &flags);
    py.detach(|| cmd::explain::run(&request))
        .map(|out| out.trim_end().to_string())
        .map_err(fail)
}

/// A job's keyword arguments: each taken by name, once; an unknown one is
/// an error naming the known ones.
struct Kwargs<'py> {
    given: Vec<(String, Bound<'py, PyAny>)>,
    known: &'static [&'static str],
}

impl<'py> Kwargs<'py> {
    /// The value of `name`, if given (None also for an explicit None).
    fn get<T: for<'a> FromPyObject<'a, 'py>>(&self, name: &str) -> PyResult<Option<T>>
    where
        for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
    {
        debug_assert!(
            self.known.contains(&name),
            "{name} is not a declared option"
        );
        match self.given.iter().find(|(k, _)| k == name) {
            Some((_, v)) if !v.is_none() => v
                .extract::<T>()
                .map(Some)
                .map_err(Into::into)
                .map_err(|e: PyErr| PyTypeError::new_err(format!("{name}: {e}"))),
            _ => Ok(None),
        }
    }
}

/// `critic-gate sweep`: the config's `[sweep]` grid into `out`.
#[pyfunction]
#[pyo3(signature = (paths, out, config=None, **options))]
fn sweep(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    config: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let (flags, config) = traffic_job(options::SWEEP, options, &paths, config.as_deref())?;
    let threads = threads_of(&flags);
    let r = critic_gate::cmd::sweep::Request {
        sources: paths,
        config,
        out,
        flags,
    };
    interruptible(py, threads, |stop| critic_gate::cmd::sweep::run(&r, stop))?
        .map(drop)
        .map_err(fail)
}

/// `critic-gate calibrate`: returns what the command prints; the files
/// (calibration.json, calibrated.toml) are in `out`. The options are
/// `calibrate`'s declared ones (`options::CALIBRATE`).
#[pyfunction]
#[pyo3(signature = (paths, out, config, max_regression_rate, **options))]
fn calibrate(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    config: Option<String>,
    max_regression_rate: f64,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (flags, config) = traffic_job(options::CALIBRATE, options, &paths, config.as_deref())?;
    let threads = threads_of(&flags);
    let r = cmd::calibrate::Request::of(paths, config, out, max_regression_rate, &flags);
    interruptible(py, threads, |stop| cmd::calibrate::run(&r, stop))?
        .map(|c| c.text)
        .map_err(fail)
}

/// `critic-gate mine`: returns what the command prints; the files
/// (mine.json, proposals, risky skips, validation/) are in `out`. The
/// options are `mine`'s declared ones (`options::MINE`).
#[pyfunction]
#[pyo3(signature = (paths, out, config=None, **options))]
fn mine(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    config: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let (flags, config) = traffic_job(options::MINE, options, &paths, config.as_deref())?;
    let threads = threads_of(&flags);
    let r = cmd::mine::Request::of(paths, out, config, &flags).map_err(fail)?;
    interruptible(py, threads, |stop| cmd::mine::run(&r, stop))?
        .map(|m| m.text)
        .map_err(fail)
}

/// The budgets `check` takes as keyword arguments: each declared budget's
/// key (`critic_gate::budgets::BUDGETS`).
fn budgets(b: Option<&Bound<'_, PyDict>>) -> PyResult<critic_gate::CheckConfig> {
    use critic_gate::budgets::{Amount, Limit, BUDGETS};
    let mut c = critic_gate::CheckConfig::default();
    for (k, v) in b.into_iter().flat_map(|d| d.iter()) {
        let k: String = k.extract()?;
        let Some(d) = BUDGETS.iter().find(|d| d.key == k) else {
            let keys: Vec<&str> = BUDGETS.iter().map(|d| d.key).collect();
            let own: Vec<String> = options::CHECK
                .iter()
                .filter(|d| d.python)
                .map(|d| d.setting.keyword())
                .collect();
            return Err(PyTypeError::new_err(format!(
                "unknown option {k:?}; the options are {}, and the budgets {}",
                own.join(", "),
                keys.join(", ")
            )));
        };
        if v.is_none() {
            continue;
        }
        let a = match d.limit {
            Limit::Count => Amount::Count(v.extract()?),
            Limit::Rate => Amount::Rate(v.extract()?),
        };
        c.limits.insert(d.budget, a);
    }
    Ok(c)
}

/// Python says `--assume-missing-at-random` and `--no-assume-missing-at-random`
/// as one keyword: True, False, or None (the config's). Set on `flags` as
/// the command line sets them.
fn set_assumed(
    flags: &mut Values,
    decl: &'static Decl,
    value: Option<Bound<'_, PyAny>>,
) -> PyResult<()> {
    let assumed = match value.filter(|v| !v.is_none()) {
        Some(v) => match checked(decl, given("assume_missing_at_random", &v)?)? {
            options::Value::Switch(b) => Some(b),
            other => unreachable!("a switch's value is a switch, not {other:?}"),
        },
        None => None,
    };
    match assumed {
        Some(true) => flags.set(Setting::AssumeMissingAtRandom, options::Value::Switch(true)),
        Some(false) => flags.set(
            Setting::NoAssumeMissingAtRandom,
            options::Value::Switch(true),
        ),
        None => {}
    }
    Ok(())
}

/// `critic-gate check`: `(passed, text, results as JSON)`.
#[pyfunction]
#[pyo3(signature = (dir, config=None, assume_missing_at_random=None, **options))]
fn check(
    py: Python<'_>,
    dir: PathBuf,
    config: Option<PathBuf>,
    assume_missing_at_random: Option<Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(bool, String, String)> {
    // The budgets are declared apart (`BUDGETS`); the rest are `check`'s
    // declared options.
    let (budgets, rest) = (PyDict::new(py), PyDict::new(py));
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        let key: String = k.extract()?;
        match options::CHECK
            .iter()
            .any(|d| d.python && d.setting.keyword() == key)
        {
            true => rest.set_item(k, v)?,
            false => budgets.set_item(k, v)?,
        }
    }
    let (mut flags, _) = declared(options::CHECK, Some(&rest), &[], &[])?;
    set_assumed(
        &mut flags,
        &options::CHECK_ASSUME_MISSING_AT_RANDOM,
        assume_missing_at_random,
    )?;
    let r =
        critic_gate::cmd::check::Request::of(dir, config, self::budgets(Some(&budgets))?, &flags);
    let v = critic_gate::cmd::check::run(&r).map_err(fail)?;
    let results: Vec<serde_json::Value> = v.results.iter().map(|r| r.to_json()).collect();
    Ok((
        v.passed,
        v.text,
        serde_json::Value::from(results).to_string(),
    ))
}

/// `critic-gate diff`: `(text, new regressions, the folder written,
/// passed)`.
#[pyfunction]
#[pyo3(signature = (old, new, out=None, **options))]
fn diff(
    old: PathBuf,
    new: PathBuf,
    out: Option<PathBuf>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, usize, PathBuf, bool)> {
    let (flags, _) = declared(options::DIFF, options, &[], &[])?;
    let r = critic_gate::cmd::diff::Request::of(old, new, out, &flags);
    let d = critic_gate::cmd::diff::run(&r).map_err(fail)?;
    Ok((d.text, d.result.new_regressions, d.out, d.passed))
}

/// A plan (plan.toml's text, or the same as JSON) held to what `plan`
/// writes, as `sample` holds it, and refused when it is an audit's (an
/// exploration gate samples production's skips): the plan as JSON.
#[pyfunction]
fn exploration_plan(name: &str, text: &str, json: bool) -> PyResult<String> {
    use critic_gate::cmd::sample::{plan_of, PlanText};
    let how = if json { PlanText::Json } else { PlanText::Toml };
    let plan = plan_of(name, text, how).map_err(fail)?;
    if plan.population != "production_skips" {
        return Err(fail(critic_gate::Error::usage(format!(
            "{name}: an audit plan samples a candidate's new skips before the switch; an exploration gate samples production's skips after it: make a plan without --audit"
        ))));
    }
    serde_json::to_string(&plan).map_err(|e| fail(critic_gate::Error::usage(e.to_string())))
}

/// The plan's coin: the top 53 bits of SHA-256(salt, 0x00, key).
#[pyfunction]
fn coin_value(salt: &str, key: &[u8]) -> u64 {
    critic_gate::coin::value(salt, key)
}

/// Whether the turn with `key` is drawn at `probability` under `salt`.
#[pyfunction]
fn coin_drawn(salt: &str, key: &[u8], probability: f64) -> bool {
    critic_gate::coin::drawn(salt, key, probability)
}

/// A turn's key: `turn_id`, else `run_id` 0x1F `turn`, else `run_id`.
#[pyfunction]
#[pyo3(signature = (run_id, turn=None, turn_id=None))]
fn turn_key(run_id: &str, turn: Option<u64>, turn_id: Option<&str>) -> Vec<u8> {
    critic_gate::coin::key(turn_id, run_id, turn)
}

/// The traffic files a command reads: at least one.
fn some_files(paths: &[String]) -> PyResult<()> {
    match paths.is_empty() {
        true => Err(PyValueError::new_err(
            "paths: give at least one traffic file",
        )),
        false => Ok(()),
    }
}

/// What a job over traffic files starts with: its declared options
/// (`set`, with `config_text` as its own keyword), at least one file, and
/// its config (a path, or the TOML text).
fn traffic_job(
    set: &'static [&'static Decl],
    options: Option<&Bound<'_, PyDict>>,
    paths: &[String],
    config: Option<&str>,
) -> PyResult<(Values, cmd::Config)> {
    let (flags, k) = declared(set, options, &["config_text"], &[])?;
    some_files(paths)?;
    Ok((flags, config_of(config, k.get("config_text")?)?))
}

/// The worker pool of a job's own that `threads=` asks for (None: the
/// process's).
fn own_pool(flags: &Values) -> PyResult<Option<rayon::ThreadPool>> {
    threads_of(flags)
        .map(cmd::worker_pool)
        .transpose()
        .map_err(fail)
}

/// `critic-gate plan`: `(what it prints, plan.toml as JSON)`; plan.toml,
/// plan.csv and plan.md are in `out`. The options are `plan`'s declared
/// ones (`options::PLAN_OPTIONS`), read as the command line reads them.
#[pyfunction]
#[pyo3(signature = (paths, out, config=None, **options))]
fn plan(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    config: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, String, Vec<String>)> {
    use critic_gate::cmd::plan::{run, Request};
    let (flags, config) = traffic_job(options::PLAN_OPTIONS, options, &paths, config.as_deref())?;
    let mut r = Request::of(paths, out, config, &flags).map_err(fail)?;
    let p = interruptible(py, None, |stop| {
        r.pass.stop = stop.pass();
        run(&r)
    })?
    .map_err(fail)?;
    let file = serde_json::to_string(&p.file).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((p.text, file, p.caveats))
}

/// `critic-gate sample`: `(what it prints, sample.json's text)`;
/// requests.jsonl and sample.json are in `out`. `threads=` places the
/// turns on a pool of the run's own (the requests are the same).
#[pyfunction]
#[pyo3(signature = (paths, plan, out, config=None, **options))]
fn sample(
    py: Python<'_>,
    paths: Vec<String>,
    plan: PathBuf,
    out: PathBuf,
    config: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, String)> {
    use critic_gate::cmd::sample::{run, Request};
    let (flags, config) = traffic_job(options::SAMPLE, options, &paths, config.as_deref())?;
    let mut r = Request::of(paths, plan, config, out.clone(), &flags);
    let pool = own_pool(&flags)?;
    let s = interruptible(py, None, |stop| {
        r.pass.stop = stop.pass();
        run(&r, pool.as_ref())
    })?
    .map_err(fail)?;
    let summary = std::fs::read_to_string(out.join("sample.json"))
        .map_err(|e| PyOSError::new_err(format!("{}: {e}", out.join("sample.json").display())))?;
    Ok((s.text, summary))
}

/// `critic-gate labels`: `(what it prints, its counts as JSON)`; the
/// labelled traffic is the file `out`.
#[pyfunction]
#[pyo3(signature = (paths, verdicts, plan, out, config=None, **options))]
#[allow(clippy::too_many_arguments)]
fn labels(
    py: Python<'_>,
    paths: Vec<String>,
    verdicts: PathBuf,
    plan: PathBuf,
    out: PathBuf,
    config: Option<String>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, String)> {
    use critic_gate::cmd::labels::{run, Request};
    let (flags, config) = traffic_job(options::LABELS, options, &paths, config.as_deref())?;
    let mut r = Request::of(paths, verdicts, plan, config, out, &flags);
    let l = interruptible(py, None, |stop| {
        r.pass.stop = stop.pass();
        run(&r)
    })?
    .map_err(fail)?;
    let counts =
        serde_json::to_string(&l.counts).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((l.text, counts))
}

/// `critic-gate monitor`: `(what it prints, whether it fails (exit 1))`;
/// monitor.csv (or .parquet), monitor.md and monitor.svg are in `out`.
/// `paths` may be empty with `merge` or an existing `state`.
#[pyfunction]
#[pyo3(signature = (paths, plan, out, config=None, assume_missing_at_random=None, **options))]
fn monitor(
    py: Python<'_>,
    paths: Vec<String>,
    plan: PathBuf,
    out: PathBuf,
    config: Option<String>,
    assume_missing_at_random: Option<Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, bool, Vec<String>)> {
    use critic_gate::cmd::monitor::{run, Request};
    let (mut flags, k) = declared(options::MONITOR, options, &["config_text"], &[])?;
    set_assumed(
        &mut flags,
        &options::MONITOR_ASSUME_MISSING_AT_RANDOM,
        assume_missing_at_random,
    )?;
    let config = config_of(config.as_deref(), k.get("config_text")?)?;
    let mut r = Request::of(paths, plan, config, out, &flags);
    let m = interruptible(py, None, |stop| {
        r.pass.stop = stop.pass();
        run(&r)
    })?
    .map_err(fail)?;
    Ok((m.text, m.failed, m.warnings))
}

/// A config given as a dict (its JSON text) as TOML text: what a config
/// file holding it would say.
#[pyfunction]
fn config_toml(json: &str) -> PyResult<String> {
    critic_gate::cmd::Config::toml_of_json(json).map_err(fail)
}

/// `critic-gate derive` over a file: one JSON line of derived signals per
/// input line.
#[pyfunction]
fn derive_file(py: Python<'_>, file: String) -> PyResult<String> {
    let r = critic_gate::cmd::derive::Request { file, time: false };
    py.detach(|| critic_gate::cmd::derive::run(&r))
        .map_err(fail)
}

/// `critic-gate derive` over inputs given as JSON texts (`source` names
/// them in an error, with the input's number from 1).
#[pyfunction]
fn derive_lines(py: Python<'_>, lines: Vec<String>, source: String) -> PyResult<Vec<String>> {
    py.detach(|| {
        lines
            .iter()
            .enumerate()
            .map(|(n, line)| {
                critic_gate::derive::derive_line(line)
                    .map(|v| v.to_string())
                    .map_err(|e| critic_gate::Error::InvalidLine {
                        source: source.clone(),
                        line: n as u64 + 1,
                        reason: e.to_string().into(),
                        skippable: false,
                    })
            })
            .collect::<critic_gate::Result<Vec<String>>>()
    })
    .map_err(fail)
}

/// What `import_` returns: what it prints, turns, rejected, counts by
/// kind, and the rejects file.
type ImportedTuple = (String, u64, u64, Vec<(String, u64)>, Option<PathBuf>);

/// `critic-gate import`: `(what it prints, turns, rejected, counts,
/// rejects file)`; the traffic file is `out`.
#[pyfunction]
#[pyo3(signature = (paths, out, from_, config=None, **options))]
fn import_(
    py: Python<'_>,
    paths: Vec<String>,
    out: PathBuf,
    from_: &str,
    config: Option<PathBuf>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<ImportedTuple> {
    let (flags, _) = declared(options::IMPORT, options, &[], &[])?;
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "paths: give at least one transcript or trace file",
        ));
    }
    let from = from_.parse().map_err(unknown)?;
    let r = critic_gate::cmd::import::Request::of(paths, from, config, out, &flags);
    let pool = own_pool(&flags)?;
    let i = py
        .detach(|| match &pool {
            Some(p) => p.install(|| critic_gate::cmd::import::run(&r)),
            None => critic_gate::cmd::import::run(&r),
        })
        .map_err(fail)?;
    let o = i.outcome;
    Ok((
        i.text,
        o.turns,
        o.rejected,
        o.counts.into_iter().collect(),
        o.rejects,
    ))
}

/// `critic-gate synth`: writes `turns` turns of synthetic traffic to `out`.
#[pyfunction]
#[pyo3(signature = (out, turns, **options))]
fn synth(
    py: Python<'_>,
    out: PathBuf,
    turns: u64,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let (flags, _) = declared(options::SYNTH, options, &[], &[])?;
    let r = critic_gate::cmd::synth::Request::of(turns, out, &flags);
    py.detach(|| critic_gate::cmd::synth::run(&r)).map_err(fail)
}

/// `critic-gate patterns`: the built-in ack patterns, or each variant's
/// list under `config`.
#[pyfunction]
#[pyo3(signature = (config=None))]
fn patterns(config: Option<PathBuf>) -> PyResult<String> {
    critic_gate::cmd::patterns::run(&critic_gate::cmd::patterns::Request { config }).map_err(fail)
}

/// `critic-gate init`: the starter config's text, written to `out` when
/// given.
#[pyfunction]
#[pyo3(signature = (out=None, **options))]
fn init(out: Option<PathBuf>, options: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let (flags, _) = declared(options::INIT, options, &[], &[])?;
    critic_gate::cmd::init::run(&critic_gate::cmd::init::Request::of(out, &flags))
        .map(|w| w.text)
        .map_err(fail)
}

/// Every table's declared columns, as schema.json holds them.
#[pyfunction]
fn schema_json() -> String {
    critic_gate::schema_json().to_string()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CriticGateError", py.get_type::<CriticGateError>())?;
    m.add("InvalidLineError", py.get_type::<InvalidLineError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("WriteError", py.get_type::<WriteError>())?;
    m.add("CannotJudgeError", py.get_type::<CannotJudgeError>())?;
    m.add("SystemRefusedError", py.get_type::<SystemRefusedError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(replay_partial, m)?)?;
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(mine, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(monitor, m)?)?;
    m.add_function(wrap_pyfunction!(schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(coin_value, m)?)?;
    m.add_function(wrap_pyfunction!(exploration_plan, m)?)?;
    m.add_function(wrap_pyfunction!(coin_drawn, m)?)?;
    m.add_function(wrap_pyfunction!(turn_key, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(sample, m)?)?;
    m.add_function(wrap_pyfunction!(labels, m)?)?;
    m.add_function(wrap_pyfunction!(derive_file, m)?)?;
    m.add_function(wrap_pyfunction!(config_toml, m)?)?;
    m.add_function(wrap_pyfunction!(derive_lines, m)?)?;
    m.add_function(wrap_pyfunction!(import_, m)?)?;
    m.add_function(wrap_pyfunction!(synth, m)?)?;
    m.add_function(wrap_pyfunction!(patterns, m)?)?;
    m.add_function(wrap_pyfunction!(init, m)?)?;
    Ok(())
}
