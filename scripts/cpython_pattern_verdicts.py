#!/usr/bin/env python3
"""Print CPython's verdict on each adopter pattern of the table in
src/gate/mod.rs (`pattern_verdicts_agree_with_cpython_or_say_they_cannot_replay`),
compiled as symfonic compiles ack patterns: re.compile(p, re.IGNORECASE).
The test records these verdicts; rerun this (CPython 3.11) to check them."""
import re

PATTERNS = [
    r"\N{LATIN SMALL LETTER O}k", r"(o)?(?(1)k|z)", r"(?a)\bs", r"(?a)(?i)s", r"(?a)s",
    r"(x{1000}){1000}", r"\1(o)", r"(o\1)", r"(?i)(?s)ok", r"x(?i)", r"(o)\1",
]
for p in PATTERNS:
    try:
        r = re.compile(p, re.IGNORECASE)
        print(f"{p!r}: Ok  (matches 'ſ': {bool(r.search('ſ'))})")
    except re.error as e:
        print(f"{p!r}: Err({e})")
