#!/usr/bin/env python3
"""A benchmark trace: N copies of the sample traces in tests/samples/otel
(written by symfonic-core 9.12.0's own exporter), one compact OTLP/JSON
document a line, for `--from otlp`.

  otlp_copies.py OUT N

Each copy gets its own trace and span ids, run ids and session ids (the
sample's, with `#K` appended), so every copy is a distinct run of a
distinct session and nothing is gathered as a span sent twice. The text of
the spans is unchanged.
"""
import glob
import json
import os
import sys


def relabel(value, k):
    """A copy of one document with copy k's ids."""
    if isinstance(value, list):
        return [relabel(v, k) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        if key == "traceId" and v:
            out[key] = f"{k:08x}" + v[8:]
        elif key in ("spanId", "parentSpanId") and v:
            out[key] = f"{k:06x}" + v[6:]
        else:
            out[key] = relabel(v, k)
    # An attribute naming a run or a session.
    if value.get("key") in ("symfonic.run.id", "symfonic.session.id"):
        text = value.get("value", {}).get("stringValue")
        if isinstance(text, str):
            out["value"] = {"stringValue": f"{text}#{k}"}
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1].strip())
    out, n = sys.argv[1], int(sys.argv[2])
    here = os.path.dirname(os.path.abspath(__file__))
    files = sorted(glob.glob(os.path.join(here, "..", "tests", "samples", "otel", "*.otlp.json")))
    if not files:
        sys.exit("no sample traces in tests/samples/otel")
    docs = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            docs.append(json.load(fh))
    with open(out, "w", encoding="utf-8") as fh:
        for k in range(n):
            for d in docs:
                fh.write(json.dumps(relabel(d, k), separators=(",", ":")) + "\n")
    print(f"{n * len(docs)} documents ({n} copies of {len(docs)} sample traces) in {out}")


if __name__ == "__main__":
    main()
