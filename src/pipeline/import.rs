//! `critic-gate import`: transcripts or traces converted into the traffic
//! format and written to one file, so a conversion can be inspected,
//! diffed and kept. Replaying that file gives the reports `replay --from`
//! gives on the input itself (the same conversion, block for block).
//!
//! The file is written beside its final name and moved into place only
//! when every input was read: an error leaves nothing half-written. With
//! `--skip-invalid`, what could not be converted goes to `FILE.rejects.jsonl`
//! (replay's `rejects.jsonl` shape).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::import::{Decoder, InputFormat};
use crate::read::reader::{Block, ReadError, Source};
use crate::Error;

/// What `import` is asked to do.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub sources: Vec<String>,
    pub from: InputFormat,
    pub deployment: crate::deployment::Deployment,
    pub out: PathBuf,
    pub skip_invalid: bool,
    pub max_line_bytes: usize,
}

/// What was imported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOutcome {
    pub turns: u64,
    pub rejected: u64,
    /// What the conversion counted (a trace's runs, stream runs, ...).
    pub counts: BTreeMap<String, u64>,
    /// Where the rejected records went, when any were.
    pub rejects: Option<PathBuf>,
}

/// Convert `o.sources` into `o.out`.
pub fn import(o: &ImportOptions) -> crate::Result<ImportOutcome> {
    match o.from {
        InputFormat::Traffic => {
            return Err(Error::Usage(crate::said![
                "import ",
                crate::vocab::Setting::From,
                " traffic: the input is traffic already; give ",
                crate::vocab::Setting::From,
                " openai-chat or ",
                crate::vocab::Setting::From,
                " otlp"
            ]))
        }
        InputFormat::OpenaiChat | InputFormat::Otlp => {}
    }
    let decoder = Decoder::new(
        o.from,
        o.deployment.clone(),
        o.sources.clone().into(),
        o.max_line_bytes,
    );
    let rejects_path = rejects_path(&o.out);
    refuse_an_input(&o.out, &o.sources)?;
    if o.skip_invalid {
        refuse_an_input(&rejects_path, &o.sources)?;
    }
    // The rejects file is staged only when records may be set aside.
    let rejects = match o.skip_invalid {
        true => Some(Staged::create(&rejects_path).map_err(|e| match e {
            Error::Usage(m) => Error::Usage(crate::said![
                format!("{m} (where "),
                crate::vocab::Setting::SkipInvalid,
                " sets records aside)"
            ]),
            other => other,
        })?),
        false => None,
    };
    let out = match Staged::create(&o.out) {
        Ok(s) => s,
        Err(e) => {
            abandon(rejects);
            return Err(e);
        }
    };
    let mut outcome = ImportOutcome::default();
    let result = convert_all(o, &decoder, &out, rejects.as_ref(), &mut outcome);
    if let Err(e) = result {
        out.abandon();
        abandon(rejects);
        return Err(e);
    }
    if let Err(e) = out.commit() {
        abandon(rejects);
        return Err(e);
    }
    match (rejects, outcome.rejected) {
        (Some(r), n) if n > 0 => {
            r.commit()?;
            outcome.rejects = Some(rejects_path);
        }
        (r, _) => {
            abandon(r);
            // What an earlier import of this file set aside is not this
            // one's.
            if std::fs::symlink_metadata(&rejects_path).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&rejects_path).map_err(|e| {
                    Error::Write(crate::Failure::caused(
                        format!(
                            "{}: cannot remove the last import's rejects: {e}",
                            rejects_path.display()
                        ),
                        e,
                    ))
                })?;
            }
        }
    }
    Ok(outcome)
}

/// Refuse to write `path` when it is one of the inputs (by any path to
/// it): the conversion would replace what it reads.
fn refuse_an_input(path: &Path, sources: &[String]) -> crate::Result<()> {
    // `-` is standard input, never a file of that name.
    let files: Vec<String> = sources.iter().filter(|s| *s != "-").cloned().collect();
    match super::input_at(path, &files) {
        Some(s) => Err(Error::Usage(crate::said![
            crate::vocab::Setting::Out,
            format!(
                " {}: is one of the inputs ({s}); give the traffic another file name",
                path.display()
            )
        ])),
        None => Ok(()),
    }
}

/// Abandon a staged rejects file, when there is one.
fn abandon(rejects: Option<Staged>) {
    if let Some(r) = rejects {
        r.abandon();
    }
}

/// `traffic.jsonl` -> `traffic.rejects.jsonl`.
fn rejects_path(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or_else(|| "import".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}.rejects.jsonl"))
}

fn convert_all(
    o: &ImportOptions,
    decoder: &Decoder,
    out: &Staged,
    rejects: Option<&Staged>,
    outcome: &mut ImportOutcome,
) -> crate::Result<()> {
    let threads = rayon::current_num_threads();
    let sources: Vec<Source> = o.sources.iter().map(|s| Source::named(s)).collect();
    let (rx, recycler) = crate::import::open(sources, 2 * threads + 2, o.max_line_bytes, decoder)?;
    let mut writer = out.writer();
    crate::replay::ordered::map_in_order(
        None,
        rx,
        2 * threads + 2,
        // Converted (and written as lines) on the workers.
        |item: Result<Block, ReadError>| {
            item.map(|b| {
                let values = decoder.convert(&b);
                (crate::import::lines(values.as_ref().unwrap_or(&b)), b)
            })
        },
        |item| -> crate::Result<()> {
            let (converted, raw) = item?;
            let block = converted.as_ref().unwrap_or(&raw);
            write_block(o, block, &mut writer, rejects, outcome)?;
            recycler.give(raw);
            Ok(())
        },
    )?;
    writer.flush().map_err(|e| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", o.out.display()),
            e,
        ))
    })
}

fn write_block(
    o: &ImportOptions,
    block: &Block,
    writer: &mut BufWriter<&File>,
    rejects: Option<&Staged>,
    outcome: &mut ImportOutcome,
) -> crate::Result<()> {
    let name = &o.sources[block.source];
    if let Some(bytes) = block.overlong {
        let reason = crate::said![
            format!("the line is {bytes} bytes, longer than "),
            crate::vocab::Setting::MaxLineBytes
        ];
        return reject(
            o,
            name,
            block.first_line,
            &reason,
            block.bytes(),
            rejects,
            outcome,
        );
    }
    if let Some(imported) = &block.imported {
        for f in &imported.failed {
            reject(o, name, f.line, &f.reason, &f.raw, rejects, outcome)?;
        }
        for (k, n) in &imported.counts {
            *outcome.counts.entry(k.to_string()).or_default() += n;
        }
    }
    let data = block.bytes();
    writer.write_all(data).map_err(|e| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", o.out.display()),
            e,
        ))
    })?;
    outcome.turns += memchr::memchr_iter(b'\n', data).count() as u64;
    Ok(())
}

fn reject(
    o: &ImportOptions,
    name: &str,
    line: u64,
    reason: &crate::options::Said,
    raw: &[u8],
    rejects: Option<&Staged>,
    outcome: &mut ImportOutcome,
) -> crate::Result<()> {
    if !o.skip_invalid {
        return Err(Error::InvalidLine {
            source: name.to_string(),
            line,
            reason: reason.clone(),
            skippable: true,
        });
    }
    outcome.rejected += 1;
    // Staged whenever --skip-invalid is given (checked above).
    let Some(rejects) = rejects else {
        return Ok(());
    };
    let mut v = serde_json::json!({"source": name, "line": line, "reason": reason.to_string(), "raw": String::from_utf8_lossy(raw)});
    if std::str::from_utf8(raw).is_err() {
        v["raw_base64"] = crate::replay::rows::base64(raw).into();
    }
    let mut w = rejects.writer();
    writeln!(w, "{v}").and_then(|_| w.flush()).map_err(|e| {
        Error::Write(crate::Failure::caused(
            format!("{}: {e}", rejects.path.display()),
            e,
        ))
    })
}

/// A file written beside its final name, moved into place on commit.
struct Staged {
    path: PathBuf,
    tmp: PathBuf,
    file: File,
}

impl Staged {
    fn create(path: &Path) -> crate::Result<Staged> {
        let shown = path.display();
        let refuse = |why: &str| {
            Err(Error::Usage(crate::said![
                crate::vocab::Setting::Out,
                format!(" {shown}: {why}")
            ]))
        };
        if path.as_os_str() == "-" {
            return refuse(
                "give the file to write the traffic to (import writes no standard output)",
            );
        }
        let name = path.file_name().ok_or_else(|| {
            Error::Usage(crate::said![
                crate::vocab::Setting::Out,
                format!(" {shown}: give a file name")
            ])
        })?;
        let lossy = name.to_string_lossy();
        if lossy.ends_with(".gz") || lossy.ends_with(".zst") {
            return refuse("import writes plain JSON Lines; give a name without .gz or .zst and compress the file afterwards");
        }
        // The file is replaced by a rename: only a regular file (or none)
        // may stand there, never a link or a device it would replace.
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                return refuse("is a folder; give the file to write the traffic to")
            }
            Ok(m) if m.file_type().is_symlink() => {
                return refuse("is a symbolic link; give the file itself")
            }
            Ok(m) if !m.is_file() => return refuse("is not a regular file"),
            _ => {}
        }
        let tmp = path.with_file_name(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file = crate::report::create_new_file(&tmp).map_err(|e| {
            Error::Write(crate::Failure::caused(
                format!("{}: cannot create: {e}", tmp.display()),
                e,
            ))
        })?;
        // Removed if a signal ends the run before it is moved into place.
        crate::report::track_temp(&tmp);
        Ok(Staged {
            path: path.to_path_buf(),
            tmp,
            file,
        })
    }

    fn writer(&self) -> BufWriter<&File> {
        BufWriter::with_capacity(1 << 20, &self.file)
    }

    fn commit(self) -> crate::Result<()> {
        let done = self
            .file
            .sync_all()
            .and_then(|_| std::fs::rename(&self.tmp, &self.path));
        crate::report::untrack_temp(&self.tmp);
        done.map_err(|e| {
            let _ = std::fs::remove_file(&self.tmp);
            Error::Write(crate::Failure::caused(
                format!("{}: {e}", self.path.display()),
                e,
            ))
        })
    }

    fn abandon(self) {
        let _ = std::fs::remove_file(&self.tmp);
        crate::report::untrack_temp(&self.tmp);
    }
}
