"""Replay a folder or object-store prefix of traffic files on Ray: each file
becomes a partial result on a worker (``critic_gate.replay_partial``), and
the driver merges them, in path order, into the reports of one replay over
every file (byte for byte what ``critic-gate replay FILES... --format both``
writes into a folder of the same name, the files named as Ray names them).

    python examples/ray_replay.py s3://bucket/traffic/2026-11/ \\
        --config datasets/gate.toml --out reports/2026-11

On a cluster: ``ray job submit --working-dir . -- python
examples/ray_replay.py s3://bucket/traffic/2026-11/ --config
datasets/gate.toml --out reports/2026-11`` (the README has the whole
command). Files are read with Ray Data (``read_binary_files``): plain
``.jsonl``, ``.gz`` or ``.zst``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional

import ray

import critic_gate

TRAFFIC_EXTENSIONS = ["jsonl", "gz", "zst"]


def partials(
    source: str, config_text: str, options: Optional[dict[str, Any]] = None
) -> list[tuple[str, bytes]]:
    """(path, partial result) of every traffic file under ``source`` (a
    folder, a file, or an object-store prefix), sorted by path."""
    opts = dict(options or {})
    files = ray.data.read_binary_files(
        source, include_paths=True, file_extensions=TRAFFIC_EXTENSIONS
    )

    def to_partial(row: dict[str, Any]) -> dict[str, Any]:
        part = critic_gate.replay_partial(
            row["bytes"], row["path"], config_text=config_text, **opts
        )
        return {"path": row["path"], "partial": part}

    rows = files.map(to_partial).take_all()
    return sorted(((r["path"], r["partial"]) for r in rows), key=lambda r: r[0])


def replay(
    source: str,
    config_text: str,
    out: str,
    label: Optional[str] = None,
    options: Optional[dict[str, Any]] = None,
) -> critic_gate.Report:
    """The reports of every traffic file under ``source``, merged on the
    driver into ``out``."""
    parts = partials(source, config_text, options)
    if not parts:
        raise critic_gate.CriticGateError(f"{source}: no .jsonl, .gz or .zst files")
    return critic_gate.merge([p for _, p in parts], out, label=label, format="both")


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", help="a folder, file or object-store prefix of traffic files")
    p.add_argument("--config", required=True, help="the gate config (TOML) on the driver")
    p.add_argument("--out", required=True, help="the report folder")
    p.add_argument("--label", default=None,
                   help="the run column of every table (default: the --out folder's name)")
    p.add_argument("--skip-invalid", action="store_true", help="as replay --skip-invalid")
    p.add_argument("--decisions", default="all", choices=["all", "changed", "none"],
                   help="as replay --decisions")
    p.add_argument("--group-by", action="append", default=[], metavar="KEY",
                   help="as replay --group-by (repeatable)")
    p.add_argument("--scope-columns", default=None, metavar="KEYS",
                   help="as replay --scope-columns: comma-separated; '' for none. Name them "
                   "when the files' first turns have different scope keys")
    p.add_argument("--address", default=None, help="a Ray cluster (default: RAY_ADDRESS or local)")
    a = p.parse_args(argv)
    with open(a.config, encoding="utf-8") as f:
        config_text = f.read()
    options: dict[str, Any] = {
        "skip_invalid": a.skip_invalid,
        "decisions": a.decisions,
        "group_by": a.group_by,
    }
    if a.scope_columns is not None:
        options["scope_columns"] = [k for k in a.scope_columns.split(",") if k]
    ray.init(address=a.address)
    try:
        report = replay(a.source, config_text, a.out, a.label, options)
    except critic_gate.CriticGateError as e:
        print(f"ray_replay: {e}", file=sys.stderr)
        return 2
    s = report.summary_dict
    print(f"{s['turns']} turns from {len(s['sources'])} files; reports in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
