"""The Ray job (examples/ray_replay.py) on a local Ray: 8 shards of synth
traffic, one partial result per file on the workers, merged on the driver,
byte for byte what one CLI replay of the same files writes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import ray

from conftest import assert_same_reports, run_cli


def load_job(root: Path):
    spec = importlib.util.spec_from_file_location("ray_replay", root / "examples/ray_replay.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    return job


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_eight_shards_on_ray_equal_one_cli_replay(root: Path, tmp_path: Path, cli: str, local_ray) -> None:
    shards = tmp_path / "traffic"
    shards.mkdir()
    for i in range(8):
        # Plain and compressed files, as object stores hold them.
        ext = ["jsonl", "jsonl.gz", "jsonl.zst"][i % 3]
        run_cli(cli, "synth", "--turns", "2500", "--seed", str(i + 1), "--out", str(shards / f"day-{i}.{ext}"))
    job = load_job(root)
    config = (root / "datasets/gate.toml").read_text()
    report = job.replay(str(shards), config, str(tmp_path / "ray/month"), label="month")
    # The files as Ray names them, in the order the job merged them.
    paths = report.summary_dict["sources"]
    assert len(paths) == 8 and paths == sorted(paths)
    run_cli(cli, "replay", *paths, "--config", "datasets/gate.toml", "--label", "month", "--format", "both",
            "--out", str(tmp_path / "cli/month"), "--quiet")
    assert_same_reports(tmp_path / "cli/month", tmp_path / "ray/month")
    assert report.summary_dict["turns"] == 8 * 2500


def test_a_task_s_error_reaches_the_driver_as_its_class(root: Path, tmp_path: Path, local_ray) -> None:
    """`except critic_gate.InvalidLineError` matches a Ray task's error,
    with the file and line it names."""
    import critic_gate

    @ray.remote
    def replay(path: str, out: str) -> None:
        critic_gate.replay([path], out=out)

    with pytest.raises(critic_gate.InvalidLineError) as e:
        ray.get(replay.remote(str(root / "datasets/invalid.jsonl"), str(tmp_path / "x")))
    assert (Path(e.value.source).name, e.value.line) == ("invalid.jsonl", 2)
