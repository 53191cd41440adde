//! `critic_gate._native`: the compiled half of the Python package. Each
//! function is a thin step over the library (the same code the CLI runs);
//! the Python half (`critic_gate/__init__.py`) turns report folders into
//! polars DataFrames. The GIL is released while the library works.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use critic_gate::{
    ConfigFile, DecisionsMode, Format, MergeOptions, PartialInput, PartialTarget, Plan,
    ReplayOptions, Targets,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

create_exception!(
    _native,
    CriticGateError,
    PyException,
    "A critic-gate error: the message names the file, the line and the reason (e.g. `traffic.jsonl:17: confidence must be a number in [0, 1]`)."
);

// One exception per kind of error, each a CriticGateError, so a caller
// can catch a bad line apart from a bad config or a failed write.
create_exception!(
    _native,
    InvalidLineError,
    CriticGateError,
    "An invalid input line (strict mode): `source`, `line` and `reason` say which and why."
);
create_exception!(
    _native,
    InputError,
    CriticGateError,
    "An input that could not be read (a missing file, a broken stream)."
);
create_exception!(
    _native,
    ConfigError,
    CriticGateError,
    "An invalid config: a key, a value or a pattern."
);
create_exception!(
    _native,
    UsageError,
    CriticGateError,
    "A request that cannot be carried out as given (an option's value, an output folder that holds an input)."
);
create_exception!(
    _native,
    WriteError,
    CriticGateError,
    "A report that could not be written (the path and why)."
);
create_exception!(
    _native,
    CannotJudgeError,
    CriticGateError,
    "A report folder that cannot be judged or compared."
);
create_exception!(
    _native,
    SystemRefusedError,
    CriticGateError,
    "The operating system refused (a thread that cannot be started)."
);

/// The library's error as the exception of its kind (an invalid line
/// also carries its source, line and reason as attributes).
fn fail(e: critic_gate::Error) -> PyErr {
    use critic_gate::Error::*;
    let m = e.to_string();
    match e {
        InvalidLine {
            source,
            line,
            reason,
        } => Python::attach(|py| {
            let err = InvalidLineError::new_err(m);
            let v = err.value(py);
            let set = v
                .setattr("source", source)
                .and_then(|()| v.setattr("line", line))
                .and_then(|()| v.setattr("reason", reason));
            set.err().unwrap_or(err)
        }),
        Read(_) => InputError::new_err(m),
        Config(_) => ConfigError::new_err(m),
        Usage(_) => UsageError::new_err(m),
        Write(_) => WriteError::new_err(m),
        CannotJudge(_) => CannotJudgeError::new_err(m),
        System(_) => SystemRefusedError::new_err(m),
    }
}

/// An option's value that is not one of its names, as a usage error.
fn unknown(e: critic_gate::vocab::UnknownName) -> PyErr {
    fail(critic_gate::Error::Usage(e.to_string()))
}

/// The plan of a config file (None: symfonic's defaults).
fn plan_from_file(config: Option<&str>) -> PyResult<Plan> {
    match config {
        None => Ok(Plan::default_plan()),
        Some(p) => ConfigFile::load(Path::new(p))
            .and_then(|c| c.plan())
            .map_err(|e| fail(e.into())),
    }
}

/// The plan of a config's TOML text (the shard API ships text to workers
/// that may not see the driver's files).
fn plan_from_text(text: &str) -> PyResult<Plan> {
    ConfigFile::parse(text, Path::new("config.toml"))
        .and_then(|c| c.plan())
        .map_err(|e| fail(e.into()))
}

/// The keyword options `replay` and `replay_partial` share with the
/// command line's flags (`skip_invalid=True` is `--skip-invalid`).
#[derive(Default)]
struct Flags {
    skip_invalid: bool,
    decisions: Option<String>,
    group_by: Vec<String>,
    scope_columns: Option<Vec<String>>,
    force: bool,
}

const FLAGS: [&str; 5] = [
    "skip_invalid",
    "decisions",
    "group_by",
    "scope_columns",
    "force",
];

impl Flags {
    /// Read `options` (keyword arguments); an unknown one is an error
    /// naming the known ones.
    fn of(options: Option<&Bound<'_, PyDict>>) -> PyResult<Flags> {
        let mut f = Flags::default();
        let Some(options) = options else {
            return Ok(f);
        };
        for (k, v) in options.iter() {
            let k: String = k.extract()?;
            match k.as_str() {
                "skip_invalid" => f.skip_invalid = v.extract()?,
                "decisions" => f.decisions = Some(v.extract()?),
                "group_by" => f.group_by = v.extract()?,
                "scope_columns" => f.scope_columns = Some(v.extract()?),
                "force" => f.force = v.extract()?,
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "unknown option {other:?}; the options are {}",
                        FLAGS.join(", ")
                    )))
                }
            }
        }
        Ok(f)
    }

    fn apply(self, mut o: ReplayOptions) -> PyResult<ReplayOptions> {
        critic_gate::validate_group_by(&self.group_by).map_err(fail)?;
        o.skip_invalid = self.skip_invalid;
        if let Some(d) = &self.decisions {
            o.decisions = d.parse::<DecisionsMode>().map_err(unknown)?;
        }
        o.group_by = self.group_by;
        o.scope_columns = self.scope_columns;
        o.force = self.force;
        Ok(o)
    }
}

/// A run's label: any text but the empty one (as `--label`); by default
/// the output folder's name, as on the command line.
fn label(label: Option<&str>, out: &Path) -> PyResult<String> {
    match label {
        Some("") => Err(PyValueError::new_err(
            "label: give a non-empty name (the run column of every table)",
        )),
        Some(l) => Ok(l.to_string()),
        None => Ok(critic_gate::default_label(out)),
    }
}

fn format(name: &str) -> PyResult<Format> {
    name.parse::<Format>().map_err(unknown)
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
) -> PyResult<()> {
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "paths: give at least one traffic file",
        ));
    }
    let plan = plan_from_file(config)?;
    let mut opts =
        Flags::of(options)?.apply(ReplayOptions::new(paths, plan, self::label(label, &out)?))?;
    opts.format = self::format(format)?;
    py.detach(|| critic_gate::replay_into(opts, &out, &()))
        .map(drop)
        .map_err(fail)
}

/// The partial result of one shard: `data` (JSON Lines, plain, gzip or
/// zstd) read as the file `source`, replayed under the config `config`
/// (TOML text).
#[pyfunction]
#[pyo3(signature = (data, source, config, **options))]
fn replay_partial<'py>(
    py: Python<'py>,
    data: &[u8],
    source: String,
    config: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let plan = plan_from_text(config)?;
    let shard = ReplayOptions::new(vec![source], plan, "shard".into());
    let mut opts = Flags::of(options)?.apply(shard)?;
    opts.source_bytes = Some(Arc::from(data));
    let targets = Targets {
        out: None,
        partial: Some(PartialTarget::Memory),
    };
    let (_, bytes) = py
        .detach(|| critic_gate::replay_to(opts, targets, &()))
        .map_err(fail)?;
    Ok(PyBytes::new(py, &bytes))
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
#[pyo3(signature = (partials, out, label=None, format="both", force=false))]
fn merge(
    py: Python<'_>,
    partials: Vec<Bound<'_, PyAny>>,
    out: PathBuf,
    label: Option<&str>,
    format: &str,
    force: bool,
) -> PyResult<()> {
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
    let o = MergeOptions {
        inputs,
        label: self::label(label, &out)?,
        format: self::format(format)?,
        force,
    };
    py.detach(|| critic_gate::merge(o, &out))
        .map(drop)
        .map_err(fail)
}

/// How each variant of the config decides `turn` (one turn as JSON text),
/// and why, as JSON text.
#[pyfunction]
#[pyo3(signature = (turn, config=None))]
fn explain(turn: &str, config: Option<&str>) -> PyResult<String> {
    let plan = plan_from_file(config)?;
    critic_gate::explain::explain_json(turn, "turn", &plan)
        .map(|v| v.to_string())
        .map_err(fail)
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
    Ok(())
}
