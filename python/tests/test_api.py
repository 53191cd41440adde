"""The Python package against the CLI: the same figures, tables typed as
schema.json declares them, errors that name file and line, and the shard
API (partial results in memory, merged) byte for byte."""

from __future__ import annotations

import gzip
import errno
import pickle
import subprocess
import warnings
import json
from pathlib import Path

import polars as pl
import pytest

import critic_gate
from conftest import assert_same_reports, run_cli

DATASETS = ["seed", "costs", "fail-open", "floors", "multilingual", "threshold-0.7"]


def test_replay_of_the_seed_tells_the_readme_story(root: Path) -> None:
    r = critic_gate.replay([root / "datasets/seed.jsonl"], config=root / "datasets/gate.toml")
    s = r.summary.select("variant", "turns", "fires", "saved_calls", "safety_regressions")
    assert s.rows() == [("legacy", 20, 20, 0, 0), ("smart", 20, 10, 10, 1)]
    assert r.summary_dict["turns"] == 20
    assert r.folder is None, "out=None keeps the tables in memory only"
    assert {"summary", "segments", "floors", "decisions", "matrix"} <= set(r.tables)


def test_tables_have_the_declared_types_even_when_empty(root: Path, tmp_path: Path) -> None:
    r = critic_gate.replay([root / "datasets/seed.jsonl"], config=root / "datasets/gate.toml", out=tmp_path / "r")
    schema = json.loads((tmp_path / "r/schema.json").read_text())
    kinds = {"u64": pl.UInt64, "i64": pl.Int64, "f64": pl.Float64, "string": pl.String, "bool": pl.Boolean}
    checked = 0
    for file, table in schema["tables"].items():
        name = file.removesuffix(".csv")
        if name not in r.tables:
            continue
        checked += 1
        df = r.table(name)
        declared = [(c["name"], kinds[c["type"]]) for c in table["columns"]]
        assert [(n, t) for n, t in df.schema.items()] == declared, name
    assert checked == len(r.tables)
    assert r.summary_dict["run"] == "r", "the label is the folder's name, as on the CLI"
    assert r.regressions.height == 1 and r.mismatches.height == 0, "empty or not, typed"


def test_parquet_tables_hold_the_csv_values(root: Path, tmp_path: Path, cli: str) -> None:
    """The Parquet files are written by critic-gate's own encoder
    (polars-parquet's arrow API); polars' reader is the independent check
    that they hold the CSV's rows, typed as declared."""
    synth = tmp_path / "synth.jsonl"
    run_cli(cli, "synth", "--turns", "3000", "--mix", "multilingual", "--out", str(synth))
    out = tmp_path / "both"
    run_cli(cli, "replay", str(synth), "datasets/invalid.jsonl", "--skip-invalid", "--config",
            "datasets/sweep.toml", "--decisions", "all", "--format", "both", "--out", str(out), "--quiet")
    kinds = {"u64": pl.UInt64, "i64": pl.Int64, "f64": pl.Float64, "string": pl.String, "bool": pl.Boolean}
    compared = set()
    for file, table in json.loads((out / "schema.json").read_text())["tables"].items():
        parquet = out / (file.removesuffix(".csv") + ".parquet")
        if not parquet.is_file():
            continue
        declared = {c["name"]: kinds[c["type"]] for c in table["columns"]}
        csv = pl.read_csv(out / file, schema=declared)
        assert pl.read_parquet(parquet).equals(csv, null_equal=True), file
        compared.add(file)
    assert {"summary.csv", "decisions.csv", "regressions.csv", "segments.csv"} <= compared


def test_a_folder_is_what_the_cli_writes(root: Path, tmp_path: Path, cli: str) -> None:
    files = [str(root / f"datasets/{d}.jsonl") for d in DATASETS]
    critic_gate.replay(files, config=root / "datasets/gate.toml", out=tmp_path / "py/run", label="run")
    run_cli(cli, "replay", *files, "--config", "datasets/gate.toml", "--format", "both",
            "--label", "run", "--out", str(tmp_path / "cli/run"), "--quiet")
    assert_same_reports(tmp_path / "cli/run", tmp_path / "py/run")


def test_partials_in_memory_merge_into_one_replay(root: Path, tmp_path: Path, cli: str) -> None:
    config = (root / "datasets/gate.toml").read_text()
    names = [f"datasets/{d}.jsonl" for d in DATASETS] + ["datasets/invalid.jsonl"]
    parts = []
    for n in names:
        data = (root / n).read_bytes()
        if n.endswith("seed.jsonl"):
            data = gzip.compress(data)  # compressed bytes are read too
        # Named scope columns: the files do not all have scopes, so the
        # columns each shard would find from its own first turns differ.
        opts = {"skip_invalid": True, "scope_columns": ["tenant", "channel"]}
        parts.append(critic_gate.replay_partial(data, n, config_text=config, **opts))
    # Partial results as bytes, or as files the CLI wrote (read by path).
    cli_part = tmp_path / "floors.partial"
    run_cli(cli, "replay", names[3], "--config", "datasets/gate.toml", "--skip-invalid",
            "--scope-columns", "tenant,channel", "--partial", str(cli_part), "--quiet")
    parts[3] = cli_part
    merged = critic_gate.merge(parts, tmp_path / "merged/all", label="all")
    run_cli(cli, "replay", *names, "--config", "datasets/gate.toml", "--skip-invalid", "--format", "both",
            "--scope-columns", "tenant,channel",
            "--label", "all", "--out", str(tmp_path / "one/all"), "--quiet")
    assert_same_reports(tmp_path / "one/all", tmp_path / "merged/all")
    assert merged.summary_dict["rejected"] > 0


def test_explain_gives_each_variants_decision(root: Path) -> None:
    e = critic_gate.explain({"run_id": "r", "turn": 1, "draft": "Got it, thanks!", "confidence": 0.9})
    assert [(v["variant"], v["fires"]) for v in e["variants"]] == [("legacy", False), ("smart", False)]
    e = critic_gate.explain({"run_id": "r", "turn": 1, "draft": "Got it, thanks!"})
    assert [v["fires"] for v in e["variants"]] == [True, False], "cold start: legacy fires, smart skips the ack"


def test_errors_name_file_line_and_reason(root: Path, tmp_path: Path) -> None:
    with pytest.raises(critic_gate.CriticGateError, match=r"invalid\.jsonl:2: confidence must be a number"):
        critic_gate.replay([root / "datasets/invalid.jsonl"], out=tmp_path / "x")
    assert not (tmp_path / "x").exists(), "nothing half-written"
    with pytest.raises(critic_gate.CriticGateError, match=r"shard\.jsonl:1: "):
        critic_gate.replay_partial(b"{not json}\n", "shard.jsonl", config_text="")
    with pytest.raises(critic_gate.CriticGateError, match=r"partials\[0\]: damaged partial result"):
        critic_gate.merge([b"not a partial"])
    with pytest.raises(TypeError, match="skip_invalidd"):
        critic_gate.replay([root / "datasets/seed.jsonl"], skip_invalidd=True)
    with pytest.raises(critic_gate.CriticGateError, match="config.toml"):
        critic_gate.replay_partial(b"", "s.jsonl", config_text="threshold = ")


def test_each_kind_of_error_is_its_own_exception(root: Path, tmp_path: Path) -> None:
    with pytest.raises(critic_gate.InvalidLineError) as bad:
        critic_gate.replay([root / "datasets/invalid.jsonl"], out=tmp_path / "x")
    assert (Path(bad.value.source).name, bad.value.line) == ("invalid.jsonl", 2)
    assert bad.value.reason.startswith("confidence must be a number"), bad.value.reason
    with pytest.raises(critic_gate.ConfigError, match="config.toml") as e:
        critic_gate.replay_partial(b"", "s.jsonl", config_text="threshold = ")
    assert e.value.kind == "syntax", e.value.kind
    with pytest.raises(critic_gate.UsageError, match="given twice"):
        critic_gate.replay([root / "datasets/seed.jsonl"], group_by=["critic.model"] * 2)
    with pytest.raises(critic_gate.UsageError, match='decisions "sometimes": give all, changed or none'):
        critic_gate.replay([root / "datasets/seed.jsonl"], out=tmp_path / "y", decisions="sometimes")
    with pytest.raises(critic_gate.InputError, match="cannot open") as missing:
        critic_gate.replay([tmp_path / "missing.jsonl"], out=tmp_path / "z")
    assert isinstance(missing.value.__cause__, FileNotFoundError), repr(missing.value.__cause__)
    with pytest.raises(critic_gate.CriticGateError) as damaged:
        critic_gate.merge([b"not a partial"])
    assert type(damaged.value) is not critic_gate.CriticGateError, "every error has its kind"
    kinds = [critic_gate.InvalidLineError, critic_gate.InputError, critic_gate.ConfigError,
             critic_gate.UsageError, critic_gate.WriteError, critic_gate.CannotJudgeError,
             critic_gate.SystemRefusedError]
    assert all(issubclass(k, critic_gate.CriticGateError) for k in kinds)
    with pytest.raises(critic_gate.InvalidLineError) as turn:
        critic_gate.explain({"run_id": 5, "draft": "ok"})
    assert turn.value.reason.startswith("run_id must be a string"), turn.value.reason
    assert turn.value.source == "turn", turn.value.source
    assert len(set(kinds)) == 7


KINDS = ["CriticGateError", "InvalidLineError", "InputError", "ConfigError", "UsageError", "WriteError",
         "CannotJudgeError", "SystemRefusedError"]


def test_every_exception_pickles_as_its_own_class() -> None:
    """Each class lives in `critic_gate` (where pickle looks it up), and an
    error's message and attributes survive the round trip."""
    for name in KINDS:
        cls = getattr(critic_gate, name)
        assert cls.__module__ == "critic_gate", (name, cls.__module__)
        e = cls(f"x.jsonl:3: {name}")
        e.source, e.line = "x.jsonl", 3
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is cls and str(back) == str(e), (name, back)
        assert (back.source, back.line) == ("x.jsonl", 3)


def replay_in_worker(path: str, out: str) -> None:
    critic_gate.replay([path], out=out)


def test_a_worker_s_error_reaches_a_process_pool_driver_as_its_class(root: Path, tmp_path: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        job = pool.submit(replay_in_worker, str(root / "datasets/invalid.jsonl"), str(tmp_path / "x"))
        with pytest.raises(critic_gate.InvalidLineError) as e:
            job.result()
    assert (Path(e.value.source).name, e.value.line) == ("invalid.jsonl", 2)
    assert e.value.reason.startswith("confidence must be a number"), e.value.reason


def test_an_interrupt_stops_a_replay_within_a_second_and_writes_nothing(tmp_path: Path, cli: str) -> None:
    """Ctrl-C (here `_thread.interrupt_main`, what a notebook's interrupt
    does) one second into a replay of 6,000,000 turns (some 12 s) stops it
    as SIGINT stops the CLI: KeyboardInterrupt within a second, and the
    output folder as it was (absent, or an earlier report unchanged)."""
    import signal

    # As in a terminal or a notebook: a job started in the background of a
    # shell (as CI may) ignores SIGINT, and interrupt_main then does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupted_twice(tmp_path, cli)
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_twice(tmp_path: Path, cli: str) -> None:
    import _thread
    import threading
    import time

    traffic = tmp_path / "t.jsonl"
    run_cli(cli, "synth", "--turns", "100000", "--seed", "3", "--out", str(traffic))
    earlier = tmp_path / "earlier"
    critic_gate.replay([traffic], out=earlier)

    def files(d: Path) -> dict[str, bytes]:
        return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}

    before = files(earlier)
    for out in (tmp_path / "new", earlier):
        fired: list[float] = []
        timer = threading.Timer(1.0, lambda: (fired.append(time.monotonic()), _thread.interrupt_main()))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            critic_gate.replay([traffic] * 60, out=out)
        stopped = time.monotonic()
        timer.join()
        assert fired and stopped - fired[0] < 1.0, f"stopped {stopped - fired[0]:.2f} s after the interrupt"
    # mine's first pass (its own, serial) stops as the replay does.
    fired = []
    timer = threading.Timer(1.0, lambda: (fired.append(time.monotonic()), _thread.interrupt_main()))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        critic_gate.mine([traffic] * 60, tmp_path / "mined")
    stopped = time.monotonic()
    timer.join()
    assert fired and stopped - fired[0] < 1.0, f"mine stopped {stopped - fired[0]:.2f} s after the interrupt"
    assert not (tmp_path / "new").exists() and not (tmp_path / "mined").exists()
    assert files(earlier) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["earlier", "t.jsonl"], "nothing staged is left"


def test_threads_runs_on_a_pool_of_its_own_with_the_same_reports(root: Path, tmp_path: Path) -> None:
    """`threads=` (a Ray task's share of a node) gives the reports of the
    default pool, and is refused as --threads is, before any work."""
    seed, config = root / "datasets/seed.jsonl", root / "datasets/gate.toml"
    critic_gate.replay(seed, config=config, out=tmp_path / "all", label="x")
    for n in (1, 3):
        critic_gate.replay(seed, config=config, out=tmp_path / f"t{n}", label="x", threads=n)
        assert_same_reports(tmp_path / "all", tmp_path / f"t{n}")
    for bad, said, kind in ((0, r"threads 0: give 1 to \d+", critic_gate.UsageError),
                            (10**6, r"threads 1000000: give 1 to", critic_gate.UsageError),
                            ("2", 'threads: give a whole number, got "2"', TypeError)):
        with pytest.raises(kind, match=said):
            critic_gate.replay(seed, config=config, out=tmp_path / "bad", threads=bad)
        assert not (tmp_path / "bad").exists()
    part = critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl", config=config, threads=2)
    assert part == critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl", config=config)


def test_explain_takes_a_conversation_as_its_turns(root: Path) -> None:
    """One transcript (a dict) under from_="openai-chat" is several turns:
    a list, as the CLI's explain --json --from openai-chat gives them."""
    conversation = json.loads((root / "datasets/transcripts.jsonl").read_text().splitlines()[0])
    cfg = root / "datasets/transcripts.toml"
    got = critic_gate.explain(conversation, cfg, from_="openai-chat")
    assert isinstance(got, list) and len(got) > 1, got
    assert got == critic_gate.explain([conversation], cfg, from_="openai-chat")


def test_explain_takes_many_turns_or_a_file_in_one_call(root: Path, tmp_path: Path, cli: str) -> None:
    """A list of turns or a file is explained in one call, turn for turn
    what `critic-gate explain --json` prints; a bad turn is named by its
    place."""
    seed, config = root / "datasets/seed.jsonl", root / "datasets/gate.toml"
    turns = [json.loads(line) for line in seed.read_text().splitlines() if line.strip()]
    done = subprocess.run([cli, "explain", "--json", "--config", str(config), str(seed)],
                          capture_output=True, text=True, check=True)
    want = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(want) == len(turns) > 1
    assert critic_gate.explain(turns, config) == want
    assert critic_gate.explain(seed, config) == want
    assert critic_gate.explain(turns[3], config) == want[3]
    with pytest.raises(critic_gate.InvalidLineError) as bad:
        critic_gate.explain([turns[0], {"run_id": 5, "draft": "ok"}], config)
    assert (bad.value.source, bad.value.line) == ("turns", 2), (bad.value.source, bad.value.line)


def test_a_run_s_warnings_are_python_warnings(tmp_path: Path) -> None:
    """What the CLI says on stderr as `warning:` (a turn given twice) a
    Python caller gets as a CriticGateWarning, pointing at its own line."""
    line = '{"run_id": "r", "turn": 1, "draft": "Got it, thanks!"}\n'
    traffic = tmp_path / "t.jsonl"
    traffic.write_text(line * 2)
    with pytest.warns(critic_gate.CriticGateWarning, match=r"duplicate_turn \(first at .*t\.jsonl:2\)") as said:
        critic_gate.replay(traffic)
    assert said[0].filename == __file__, said[0].filename
    # Every line the console warns with, the segment cap's note too.
    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({"run_id": f"r{i}", "turn": 1, "draft": "Got it, thanks!"}) + "\n"
                            for i in range(1200)))
    with pytest.warns(critic_gate.CriticGateWarning, match=r"segments\.csv keeps the \d+ largest of 1200 values"):
        critic_gate.replay(many, group_by=["run_id"])
    # A run with nothing to say warns of nothing: every field known, the
    # critic's model priced.
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({
        "run_id": "r", "turn": 3, "draft": "Got it, thanks!", "confidence": 0.5, "sensitive_hit": None,
        "critic": {"ran": True, "verdict": "approve", "reflection_latency_ms": 2412.0,
                   "reflection_tokens_in": 3105, "reflection_tokens_out": 41, "model": "m"},
    }) + "\n")
    config = tmp_path / "gate.toml"
    config.write_text('[cost]\ndefault_model = "m"\n[cost.models.m]\nusd_per_mtok_in = 15.0\nusd_per_mtok_out = 75.0\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        critic_gate.replay(clean, config=config)


def test_a_report_opens_a_csv_folder_as_the_same_dataframes(root: Path, tmp_path: Path, cli: str) -> None:
    """A folder the CLI wrote as CSV (its default) opens as a Report whose
    tables equal, values and types, those of the same replay in Parquet:
    text a spreadsheet would run, which the CSV guards with a `'`, too."""
    config = root / "datasets/gate.toml"
    seed = tmp_path / "seed.jsonl"
    risky = ["=cmd", "+1 555", "@bob", "'=x", "''@y", "-x", "-2", "-", "'plain", "\tt"]
    seed.write_text((root / "datasets/seed.jsonl").read_text() + "".join(
        json.dumps({"run_id": r, "turn": 1, "draft": r + " Got it, thanks!", "scope": {"tenant": r},
                    "critic": {"ran": True, "verdict": "revise"}}) + "\n" for r in risky))
    run_cli(cli, "replay", str(seed), "--config", str(config), "--label", "x", "--out", str(tmp_path / "csv"),
            "--quiet")
    assert "'=cmd" in (tmp_path / "csv/decisions.csv").read_text(), "the CSV guards what it must"
    assert not list((tmp_path / "csv").glob("*.parquet"))
    from_csv = critic_gate.Report(tmp_path / "csv")
    from_parquet = critic_gate.replay(seed, config=config, out=tmp_path / "pq", label="x")
    assert from_csv.tables == from_parquet.tables
    for name in from_parquet.tables:
        a, b = from_csv.table(name), from_parquet.table(name)
        assert a.schema == b.schema, (name, a.schema, b.schema)
        assert a.equals(b), name
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty/summary.json").write_text("{}")
    with pytest.raises(critic_gate.CriticGateError, match="no tables"):
        critic_gate.Report(tmp_path / "empty")


def test_errors_name_the_keyword_a_python_caller_passed(root: Path, tmp_path: Path) -> None:
    """The library names a setting; Python says it as the keyword the
    caller passed, never as the command line's flag."""
    (tmp_path / "file").write_text("")
    cases = [
        (dict(group_by=["critic.model"] * 2), "group_by critic.model is given twice"),
        (dict(decisions="sometimes"), 'decisions "sometimes": give all, changed or none'),
        (dict(scope_columns=["a", "a"]), 'scope_columns: key "a" is named twice'),
        (dict(out=tmp_path / "file"), f"out {tmp_path / 'file'}: not a folder"),
    ]
    for options, said in cases:
        options.setdefault("out", tmp_path / "x")
        with pytest.raises(critic_gate.UsageError) as e:
            critic_gate.replay([root / "datasets/seed.jsonl"], **options)
        assert said in str(e.value) and "--" not in str(e.value), str(e.value)
    # What the caller gave is quoted back as given, a flag's text and all.
    with pytest.raises(critic_gate.UsageError) as e:
        critic_gate.replay([root / "datasets/seed.jsonl"], out=tmp_path / "x", decisions="--force")
    assert 'decisions "--force": give all' in str(e.value), str(e.value)
    with pytest.raises(critic_gate.UsageError) as e:
        critic_gate.check(root / "reports/seed", min_skip_rate=2)
    assert str(e.value).startswith("min_skip_rate must be"), str(e.value)
    # An invalid line's reason and the hint after it name settings too.
    (tmp_path / "long.jsonl").write_text('{"run_id":"r","turn":1,"draft":"ok"}\n')
    with pytest.raises(critic_gate.InvalidLineError) as e:
        critic_gate.replay(tmp_path / "long.jsonl", out=tmp_path / "y", max_line_bytes=5)
    said = str(e.value)
    assert "longer than max_line_bytes 5" in said and "rerun with skip_invalid" in said, said
    assert "--" not in said and e.value.reason.endswith("max_line_bytes 5"), said
    # Shards replayed with other options: the one that differs, as a keyword.
    seed = root / "datasets/seed.jsonl"
    a = critic_gate.replay_partial(seed.read_bytes(), "a.jsonl", decisions="none")
    b = critic_gate.replay_partial(seed.read_bytes(), "b.jsonl")
    with pytest.raises(critic_gate.UsageError) as e:
        critic_gate.merge([a, b], tmp_path / "m")
    assert "(decisions differ;" in str(e.value) and "--" not in str(e.value), str(e.value)
    # And a budget a message names is its keyword.
    with pytest.raises(critic_gate.CannotJudgeError) as e:
        critic_gate.check(root / "reports/seed")
    assert "max_safety_regression_rate 0.02 min_skip_rate 0.1" in str(e.value), str(e.value)


def test_number_like_values_are_taken_as_python_takes_them(root: Path, tmp_path: Path) -> None:
    """A NumPy scalar, a Fraction or an array is a value as its Python
    counterpart is; a whole number beyond any option's range is refused
    as such, said as given."""
    from fractions import Fraction
    np = pytest.importorskip("numpy")
    seed = root / "datasets/seed.jsonl"
    want = critic_gate.replay(seed, max_ack_share=0.25, max_line_bytes=1 << 20, force=True,
                              group_by=["critic.model"], label="n").summary_dict
    for given in (dict(max_ack_share=np.float32(0.25), max_line_bytes=np.int64(1 << 20),
                       force=np.bool_(True), group_by=np.array(["critic.model"])),
                  dict(max_ack_share=Fraction(1, 4), max_line_bytes=1 << 20, force=True,
                       group_by=("critic.model",))):
        got = critic_gate.replay(seed, label="n", **given).summary_dict
        assert got == want, given
    with pytest.raises(critic_gate.UsageError) as e:
        critic_gate.replay(seed, max_line_bytes=10**40)
    assert str(e.value) == f"max_line_bytes: give a whole number up to {2**64 - 1}, got {10**40}", str(e.value)
    with pytest.raises(critic_gate.UsageError, match=r"^max_line_bytes: give at least 1, got -1$"):
        critic_gate.replay(seed, max_line_bytes=-1)
    with pytest.raises(TypeError, match="^force: give True or False"):
        critic_gate.replay(seed, force=np.int64(1))
    with pytest.raises(TypeError, match=r"^group_by: give a list of names \(str\)$"):
        critic_gate.replay(seed, group_by=[1])


def test_a_failed_write_carries_its_os_error(root: Path, tmp_path: Path) -> None:
    """A WriteError keeps the operating system's error as its __cause__."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(critic_gate.WriteError) as e:
        critic_gate.replay(root / "datasets/seed.jsonl", out=blocker / "reports")
    assert isinstance(e.value.__cause__, NotADirectoryError), repr(e.value.__cause__)
    assert e.value.__cause__.errno == errno.ENOTDIR, e.value.__cause__
    assert "a-file" in str(e.value)


def test_python_refuses_what_the_cli_refuses_before_any_work(root: Path, tmp_path: Path) -> None:
    seed = root / "datasets/seed.jsonl"
    with pytest.raises(critic_gate.CriticGateError, match="given twice"):
        critic_gate.replay([seed], group_by=["critic.model", "critic.model"])
    with pytest.raises(critic_gate.CriticGateError, match="given twice"):
        critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl", group_by=["critic.model"] * 2)
    # A value a declared option refuses is a UsageError, whichever
    # function takes it.
    for run in (lambda: critic_gate.replay([seed], label=""),
                lambda: critic_gate.sweep([seed], root / "datasets/sweep.toml", tmp_path / "s", label=""),
                lambda: critic_gate.merge([critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl")],
                                          tmp_path / "m", label="")):
        with pytest.raises(critic_gate.UsageError, match="^label: give a non-empty name"):
            run()
    # replay_partial names no run and writes no tables: no label, no format.
    for kw in ("label", "format"):
        with pytest.raises(TypeError, match=f"unknown option {kw!r}".replace("'", '"')):
            critic_gate.replay_partial(seed.read_bytes(), "seed.jsonl", **{kw: "x"})
    with pytest.raises(ValueError, match="at least one traffic file"):
        critic_gate.replay([])
    with pytest.raises(ValueError, match="Parquet"):
        critic_gate.replay([seed], out=tmp_path / "csv", format="csv")
    with pytest.raises(TypeError, match="a list of partial results"):
        critic_gate.merge(str(tmp_path / "one.partial"))
    assert list(tmp_path.iterdir()) == [], "nothing written by a refused call"


def test_replay_and_merge_are_the_clis(root: Path, tmp_path: Path, cli: str) -> None:
    """replay, and merge of shards replayed in Python, write byte for byte
    the folders the CLI writes: both run the one replay command."""
    seed = root / "datasets/seed.jsonl"
    gate = str(root / "datasets/gate.toml")
    critic_gate.replay(seed, gate, tmp_path / "py/replay", label="r", group_by=["critic.model"],
                       decisions="changed")
    run_cli(cli, "replay", str(seed), "--config", gate, "--out", str(tmp_path / "cli/replay"),
            "--label", "r", "--group-by", "critic.model", "--decisions", "changed",
            "--format", "both", "--quiet")
    assert_same_reports(tmp_path / "cli/replay", tmp_path / "py/replay")

    lines = seed.read_bytes().splitlines(keepends=True)
    shards = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    shards[0].write_bytes(b"".join(lines[: len(lines) // 2]))
    shards[1].write_bytes(b"".join(lines[len(lines) // 2:]))
    partials = [critic_gate.replay_partial(s.read_bytes(), str(s), gate) for s in shards]
    critic_gate.merge(partials, tmp_path / "py/merge", label="m")
    for s in shards:
        run_cli(cli, "replay", str(s), "--config", gate, "--partial", str(s.with_suffix(".partial")),
                "--quiet")
    run_cli(cli, "merge", *(str(s.with_suffix(".partial")) for s in shards), "--out",
            str(tmp_path / "cli/merge"), "--label", "m", "--format", "both", "--quiet")
    assert_same_reports(tmp_path / "cli/merge", tmp_path / "py/merge")


def test_the_commands_are_the_clis(root: Path, tmp_path: Path, cli: str) -> None:
    """sweep, calibrate, mine, check and diff from Python write the
    folders the CLI writes, byte for byte, and decide what it decides."""
    seed = str(root / "datasets/seed.jsonl")
    sweep_toml = str(root / "datasets/sweep.toml")
    critic_gate.sweep(seed, sweep_toml, tmp_path / "py/sweep", label="s")
    run_cli(cli, "sweep", seed, "--config", sweep_toml, "--format", "both", "--label", "s",
            "--out", str(tmp_path / "cli/sweep"), "--quiet")
    assert_same_reports(tmp_path / "cli/sweep", tmp_path / "py/sweep")

    c = critic_gate.calibrate(seed, sweep_toml, tmp_path / "py/cal", 0.05, seed=3, procedure="holm")
    run_cli(cli, "calibrate", seed, "--config", sweep_toml, "--out", str(tmp_path / "cli/cal"),
            "--max-regression-rate", "0.05", "--seed", "3", "--procedure", "holm", "--quiet",
            "--label", "cal", "--format", "both")
    assert c == json.loads((tmp_path / "cli/cal/calibration.json").read_text())
    assert c["selection"]["procedure"] == "holm"
    assert_same_reports(tmp_path / "cli/cal", tmp_path / "py/cal")
    # Its tables as DataFrames: the family a row per member, each part a Report.
    family = c["selection"]["family"]
    assert c.family.height == len(family) > 0
    assert c.family["variant"].to_list() == [f["variant"] for f in family]
    assert c.family["calibration.upper_bound"].to_list() == [
        f["calibration"]["upper_bound"] for f in family]
    assert set(c.parts) == {"learn", "calibration", "held-out"}
    assert c.parts["learn"].summary.equals(
        critic_gate.Report(tmp_path / "cli/cal/learn").summary)

    m = critic_gate.mine(seed, tmp_path / "py/mine", min_labelled=3)
    run_cli(cli, "mine", seed, "--out", str(tmp_path / "cli/mine"), "--min-labelled", "3",
            "--quiet", "--label", "mine")
    assert m == json.loads((tmp_path / "cli/mine/mine.json").read_text())
    assert_same_reports(tmp_path / "cli/mine", tmp_path / "py/mine")
    # mine's tables as DataFrames, typed as declared.
    schema = json.loads((tmp_path / "cli/sweep/schema.json").read_text())["tables"]
    for name in ("proposals", "missed", "risky_skips", "risky_drafts"):
        df = getattr(m, name)
        cols = [c["name"] for c in schema[f"{name}.csv"]["columns"]]
        assert df.columns == cols, name
        assert df.height == len((tmp_path / f"cli/mine/{name}.csv").read_text().splitlines()) - 1
    # held_out=False is --no-held-out; the budget is a rate or the
    # variant's own bound (a keyword left out is not one given), not both.
    critic_gate.calibrate(seed, sweep_toml, tmp_path / "py/cal2", 0.05, held_out=False,
                          label="cal2")
    run_cli(cli, "calibrate", seed, "--config", sweep_toml, "--out", str(tmp_path / "cli/cal2"),
            "--max-regression-rate", "0.05", "--no-held-out", "--quiet", "--format", "both")
    assert_same_reports(tmp_path / "cli/cal2", tmp_path / "py/cal2")
    assert not (tmp_path / "py/cal2/held-out").exists()
    multilingual = str(root / "datasets/multilingual.jsonl")
    own = critic_gate.mine(multilingual, tmp_path / "py/own", min_labelled=5,
                           budget_from_variant=True)
    assert own["family"]["budget_from"] == "the mined variant's own upper 95% bound", own["family"]
    with pytest.raises(critic_gate.UsageError,
                       match="^give max_regression_rate or budget_from_variant, not both$"):
        critic_gate.mine(seed, tmp_path / "py/both", budget_from_variant=True,
                         max_regression_rate=0.05)
    assert not (tmp_path / "py/both").exists()
    validation = tmp_path / "cli/mine/validation"
    assert (m.validation is None) == (not validation.is_dir())
    if m.validation is not None:
        assert m.validation.summary.equals(critic_gate.Report(validation).summary)

    report = tmp_path / "py/run"
    critic_gate.replay(seed, config=root / "datasets/gate.toml", out=report)
    v = critic_gate.check(report, max_safety_regressions=0)
    assert not v and not v.passed, "the seed's smart variant has safety regressions"
    failed = [r for r in v.results if not r["pass"]]
    assert failed and failed[0]["budget"] == "max_safety_regressions", v.results
    assert critic_gate.check(report, max_safety_regressions=99).passed
    # A rate budget holds its worst case too unless the assumption is said
    # (the transcripts' 43 unlabelled new skips put it at 36.2%).
    t = root / "reports/transcripts"
    v = critic_gate.check(t, max_safety_regression_rate=0.1)
    assert not v.passed and [r["budget"] for r in v.results if not r["pass"]] == [
        "max_worst_case_regression_rate"
    ], v.results
    v = critic_gate.check(t, max_safety_regression_rate=0.1, assume_missing_at_random=True)
    assert v.passed and v.text.startswith("ASSUMED"), v.text
    with pytest.raises(critic_gate.CannotJudgeError, match="no budget was given"):
        critic_gate.check(report)
    with pytest.raises(critic_gate.UsageError, match="must be a rate in"):
        critic_gate.check(report, min_skip_rate=2.0)
    with pytest.raises(TypeError, match="max_regressions"):
        critic_gate.check(report, max_regressions=0)
    bad = tmp_path / "bad-check.toml"
    bad.write_text("[check]\nmin_skip_rate = 1.5\n")
    with pytest.raises(critic_gate.ConfigError, match=r"bad-check.toml: \[check\] min_skip_rate must be a rate") as e:
        critic_gate.check(report, bad)
    assert (Path(e.value.file).name, e.value.kind) == ("bad-check.toml", "field")
    bad.write_text("[variants.smart]\nmetacognition_selective_gate = true\nmetacognition_confidence_threshold = 1.5\n")
    with pytest.raises(critic_gate.ConfigError) as e:
        critic_gate.replay([root / "datasets/seed.jsonl"], bad)
    assert (e.value.line, e.value.kind) == (3, "value"), (e.value.line, e.value.kind, str(e.value))
    with pytest.raises(ValueError, match="format='csv'"):
        critic_gate.sweep(seed, sweep_toml, tmp_path / "py/sweep-csv", format="csv")
    assert not (tmp_path / "py/sweep-csv").exists(), "refused before any work"
    with pytest.raises(critic_gate.UsageError, match="delta: give a number between 0 and 1"):
        critic_gate.calibrate(seed, sweep_toml, tmp_path / "py/cal0", 0.05, delta=0.0)

    candidate = tmp_path / "py/candidate"
    critic_gate.replay(seed, config=root / "datasets/gate-0.7.toml", out=candidate)
    d = critic_gate.diff(report, candidate, out=tmp_path / "py/diff")
    run_cli(cli, "diff", str(report), str(candidate), "--out", str(tmp_path / "cli/diff"))
    assert_same_reports(tmp_path / "cli/diff", tmp_path / "py/diff")
    assert d["metrics"].height > 0
    turns = d["flips"].select(["source", "line"]).unique().height
    assert f"{turns} turn{'' if turns == 1 else 's'} flipped" in d["text"], d["text"]
    schema = json.loads((candidate / "schema.json").read_text())["tables"]["metrics_diff.csv"]
    assert list(d["metrics"].columns) == [c["name"] for c in schema["columns"]]
    # The verdict is diff's own, the CLI's exit code: a legacy gate that
    # fires on nothing skips two turns the critic revised.
    lax = tmp_path / "lax.toml"
    lax.write_text('baseline = "legacy"\n[variants.legacy]\nmetacognition_confidence_threshold = 0.0\n'
                   '[variants.smart]\nmetacognition_selective_gate = true\n')
    critic_gate.replay(seed, config=lax, out=tmp_path / "py/lax")
    for strict in (False, True):
        got = critic_gate.diff(report, tmp_path / "py/lax", out=tmp_path / f"py/diff-{strict}",
                               fail_on_new_regressions=strict)
        flags = ["--fail-on-new-regressions"] if strict else []
        done = subprocess.run([cli, "diff", str(report), str(tmp_path / "py/lax"), "--out",
                               str(tmp_path / f"cli/diff-{strict}"), *flags], capture_output=True)
        assert got["new_regressions"] == 2 and got["passed"] is (done.returncode == 0) is (not strict), done


def test_replay_takes_the_clis_reading_flags(root: Path, tmp_path: Path, cli: str) -> None:
    """from_, max_ack_share and scope_columns=[""] as on the command line."""
    t = str(root / "datasets/transcripts.jsonl")
    cfg = root / "datasets/transcripts.toml"
    critic_gate.replay(t, config=cfg, out=tmp_path / "py/t", from_="openai-chat",
                       max_ack_share=0.4, scope_columns=[""], label="t")
    run_cli(cli, "replay", t, "--config", str(cfg), "--from", "openai-chat", "--max-ack-share", "0.4",
            "--scope-columns", "", "--format", "both", "--label", "t", "--out", str(tmp_path / "cli/t"), "--quiet")
    assert_same_reports(tmp_path / "cli/t", tmp_path / "py/t")
    with pytest.raises(critic_gate.UsageError, match=r"max_ack_share: give a share in \(0, 1\]"):
        critic_gate.replay(t, config=cfg, from_="openai-chat", max_ack_share=0.0)
    with pytest.raises(critic_gate.UsageError, match='^from_ "csv": give traffic, openai-chat or otlp'):
        critic_gate.replay(t, from_="csv")


def test_replay_and_replay_partial_take_the_config_the_same_way(root: Path, tmp_path: Path) -> None:
    gate = root / "datasets/gate.toml"
    data = (root / "datasets/seed.jsonl").read_bytes()
    by_path = critic_gate.replay_partial(data, "seed.jsonl", gate)
    by_text = critic_gate.replay_partial(data, "seed.jsonl", config_text=gate.read_text())
    assert critic_gate.merge([by_path]).summary_dict["variants"] == critic_gate.merge([by_text]).summary_dict["variants"]
    # The priced config, not the defaults: dollars are reported.
    assert critic_gate.merge([by_path]).summary_dict["variants"]["smart"]["saved_usd"] is not None
    a = critic_gate.replay([root / "datasets/seed.jsonl"], gate).summary_dict
    b = critic_gate.replay([root / "datasets/seed.jsonl"], config_text=gate.read_text()).summary_dict
    assert a["variants"] == b["variants"]
    # TOML text where a path goes names the keyword to use, for both.
    for call in (lambda: critic_gate.replay_partial(data, "seed.jsonl", gate.read_text()),
                 lambda: critic_gate.replay([root / "datasets/seed.jsonl"], gate.read_text())):
        with pytest.raises(ValueError, match="config_text="):
            call()
    with pytest.raises(ValueError, match="not both"):
        critic_gate.replay_partial(data, "seed.jsonl", gate, config_text="")



def test_a_type_checker_holds_calls_to_the_signatures(tmp_path: Path) -> None:
    """``mypy --strict`` passes a script that calls the commands as
    documented and rejects, line by line, a misspelled keyword, a wrong
    type and a value the command line's flag does not take: every command's
    keywords are typed parameters, not ``**options``."""
    import subprocess
    import sys

    good = tmp_path / "good.py"
    good.write_text(
        "import critic_gate\n"
        "r = critic_gate.replay(['t.jsonl'], 'gate.toml', skip_invalid=True, decisions='changed',\n"
        "                       group_by=['critic.model'], from_='otlp', max_ack_share=0.5)\n"
        "p = critic_gate.replay_partial(b'', 't.jsonl', config_text='', threads=2)\n"
        "s = critic_gate.sweep(['t.jsonl'], 'sweep.toml', 'out', format='parquet')\n"
        "c = critic_gate.calibrate(['t.jsonl'], 'sweep.toml', 'out', 0.05, procedure='holm', plan='p.toml')\n"
        "m = critic_gate.mine(['t.jsonl'], 'out', min_support=3)\n"
        "v = critic_gate.check('reports/x', max_safety_regression_rate=0.02, min_turns=100)\n"
        "f = critic_gate.synth('s.jsonl', 10, seed=2, mix='multilingual', shape='openai-chat')\n"
        "i = critic_gate.import_('c.jsonl', 't.jsonl', from_='otlp', threads=2)\n"
        "n: int = i.turns\n"
        "d = critic_gate.derive([{'draft': 'ok'}])\n"
        "k = critic_gate.replay(['t.jsonl'], {'variants': {'smart': {}}})\n"
        "t = m.proposals.height + c.family.height\n"
        "pl = critic_gate.plan('t.jsonl', 'plan', max_skip_regression_rate=0.01, window_days='2w')\n"
        "sa = critic_gate.sample('t.jsonl', 'plan/plan.toml', 'shadow', threads=2)\n"
        "la = critic_gate.labels('t.jsonl', 'v.jsonl', 'plan/plan.toml', 'l.jsonl', force=True)\n"
        "w = critic_gate.monitor('l.jsonl', 'plan/plan.toml', 'watch', by='week', alarm_rise=3.0)\n"
        "g = critic_gate.merge([b''], 'out', force=True)\n"
        "x = critic_gate.diff('a', 'b', fail_on_new_regressions=True)\n"
        "z = critic_gate.init('gate.toml', force=True)\n"
        "y = critic_gate.check('reports/x', variants=['smart'], markdown='v.md', max_rejected=0)\n"
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import critic_gate\n"
        "critic_gate.replay(['t.jsonl'], skip_invald=True)\n"
        "critic_gate.replay(['t.jsonl'], max_ack_share='0.5')\n"
        "critic_gate.replay(['t.jsonl'], decisions='some')\n"
        "critic_gate.calibrate(['t.jsonl'], 'c.toml', 'out', 0.05, procedure='holms')\n"
        "critic_gate.mine(['t.jsonl'], 'out', min_suport=3)\n"
        "critic_gate.sweep(['t.jsonl'], 'c.toml', 'out', format='xlsx')\n"
        "critic_gate.check('reports/x', max_safety_regresion_rate=0.02)\n"
        "critic_gate.synth('s.jsonl', 10, mix='klingon')\n"
        "critic_gate.import_('c.jsonl', 't.jsonl', from_='traffic')\n"
        "critic_gate.replay(['t.jsonl'], 7)\n"
        "critic_gate.plan('t.jsonl', 'plan', max_skip_regresion_rate=0.01)\n"
        "critic_gate.monitor('l.jsonl', 'plan/plan.toml', 'watch', by='month')\n"
        "critic_gate.sample('t.jsonl', 'plan/plan.toml', 'shadow', threads='2')\n"
        "critic_gate.labels('t.jsonl', 'v.jsonl', 'p.toml', 'l.jsonl', from_='otlp')\n"
        "critic_gate.diff('a', 'b', fail_on_new_regression=True)\n"
        "critic_gate.init('gate.toml', forced=True)\n"
        "critic_gate.check('reports/x', markdown=3)\n"
        "critic_gate.merge([b''], 'out', forced=True)\n"
    )

    def mypy(script: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
             str(script)],
            capture_output=True, text=True, check=False,
        )

    ok = mypy(good)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    no = mypy(bad)
    assert no.returncode == 1, no.stdout + no.stderr
    flagged = {int(line.split(":")[1]) for line in no.stdout.splitlines() if ": error:" in line}
    assert flagged == set(range(2, 20)), no.stdout


def test_python_defaults_are_the_clis(cli: str) -> None:
    """Every keyword a command takes with a default of its own (not None,
    which takes the library's) has the default the CLI's ``--help`` gives
    its flag: ``window_days=7.0`` is ``--window 7d``. The one documented
    difference: ``format`` is ``both`` where the DataFrames are read from
    Parquet (replay, sweep, calibrate, merge). The declared options'
    defaults (``_flags.DEFAULTS``, generated from the declarations) are
    those ``replay --help`` gives."""
    import inspect
    import re
    import subprocess

    def cli_defaults(command: str) -> dict[str, str]:
        text = subprocess.run([cli, command, "--help"], capture_output=True, text=True,
                              check=True).stdout
        found: dict[str, str] = {}
        last = None
        for line in text.splitlines():
            flag = re.match(r"\s+(?:-\w, )?--([\w-]+)", line)
            if flag:
                last = flag.group(1)
                found[last] = ""
            # On the flag's line, or (long help) a line of its own below.
            default = re.search(r"\[default: ([^\]]*)\]", line)
            if default and last is not None:
                found[last] = default.group(1)
        return found

    def days(text: str) -> float:
        n, unit = float(text[:-1]), text[-1]
        return n * {"d": 1, "w": 7}[unit]

    commands = [
        (critic_gate.replay, "replay"), (critic_gate.replay_partial, "replay"),
        (critic_gate.sweep, "sweep"), (critic_gate.calibrate, "calibrate"),
        (critic_gate.mine, "mine"), (critic_gate.merge, "merge"),
        (critic_gate.plan, "plan"), (critic_gate.monitor, "monitor"),
        (critic_gate.synth, "synth"), (critic_gate.import_, "import"),
        (critic_gate.init, "init"), (critic_gate.explain, "explain"),
    ]
    checked = 0
    for fn, command in commands:
        flags = cli_defaults(command)
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind is not p.KEYWORD_ONLY or p.default is None or p.default is p.empty:
                continue
            if name == "format" and command in {"replay", "sweep", "calibrate", "merge"}:
                assert p.default == "both", (command, p.default)
                continue
            flag = name.rstrip("_").replace("_", "-")
            if flag == "from":
                pass
            elif flag not in flags and flag.endswith("-days"):
                flag = flag[: -len("-days")]
            assert flag in flags, f"{fn.__name__}({name}=...) has no --{flag} in `{command} --help`"
            cli_default = flags[flag]
            if isinstance(p.default, bool):
                assert p.default is False and cli_default == "", (command, name)
            elif isinstance(p.default, tuple):
                assert p.default == () and cli_default == "", (command, name)
            elif name.endswith("_days"):
                assert p.default == days(cli_default), (command, name, p.default, cli_default)
            elif isinstance(p.default, float):
                assert p.default == float(cli_default), (command, name, p.default, cli_default)
            else:
                assert str(p.default) == cli_default, (command, name, p.default, cli_default)
            checked += 1
    from critic_gate import _flags
    for cls, (command, defaults) in _flags.DEFAULTS.items():
        flags = cli_defaults(command)
        for name, default in defaults.items():
            flag = name.rstrip("_").replace("_", "-")
            if flag not in flags and flag.endswith("-days"):
                flag = flag[: -len("-days")]
            if flag not in flags and flag.endswith("s") and flag[:-1] in flags:
                # A list keyword for a flag given once per value:
                # variants=[...] is --variant A --variant B.
                flag = flag[:-1]
            if flag not in flags and f"no-{flag}" in flags:
                # Said as what it turns off: held_out=True is no --no-held-out.
                assert default is True and flags[f"no-{flag}"] == "", (cls, name, default)
                checked += 1
                continue
            assert flag in flags, (cls, command, name)
            want = flags[flag]
            if name.endswith("_days") and want:
                assert default == days(want), (cls, name, default, want)
            elif isinstance(default, float):
                assert want and float(want) == default, (cls, name, default, want)
            else:
                got = "" if default is None or default is False else str(default)
                assert got == want, (cls, name, default, want)
            checked += 1
    assert checked >= 60, checked


def test_check_takes_every_budget_the_cli_declares(cli: str) -> None:
    """``check``'s typed budget keywords are the budgets ``check --help``
    lists (the library's one declaration): a budget added there and not
    here, or the other way, fails this test."""
    import inspect
    import re
    import subprocess

    text = subprocess.run([cli, "check", "--help"], capture_output=True, text=True,
                          check=True).stdout
    flags = {f.replace("-", "_") for f in re.findall(r"^\s+--((?:max|min)-[\w-]+)", text, flags=re.M)}
    keywords = {n for n in inspect.signature(critic_gate.check).parameters
                if n.startswith(("max_", "min_"))}
    assert flags and keywords == flags, (sorted(keywords ^ flags))
