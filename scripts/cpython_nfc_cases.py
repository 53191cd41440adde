#!/usr/bin/env python3
"""Write crates/core/tests/cpython/nfc.jsonl: random short strings with CPython 3.11's
unicodedata.normalize("NFC", s), for `derive::pytext::tests::nfc_matches_cpython`.
The pool mixes ASCII, precomposed and decomposed Latin and Greek letters,
combining marks of several classes (so reordering matters), Hangul
syllables and jamo, and characters of scripts newer than CPython 3.11's
Unicode 14 (Kawi, Nag Mundari, Kirat Rai, Gurung Khema, Tulu-Tigalari),
which `unicode-normalization`'s Unicode 16 tables decompose, reorder or
compose while CPython leaves them alone. Run with CPython 3.11 from the
repository root; the seed is fixed."""
import json
import random
import sys
import unicodedata

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"
random.seed(5)
GROUPS = [
    list("aAeEoOuUnNcCsS i"),
    ["\u00e9", "\u00c5", "\u00f1", "\u1e69", "\u1f00", "\u0390", "\u212b", "\u2126",
     "\u0915", "\u093c", "\u0958"],
    ["\u0301", "\u0308", "\u0323", "\u031b", "\u0345", "\u0300", "\u0327", "\u05b0",
     "\u0f71"],
    ["\u1100", "\u1161", "\u11a8", "\uac00", "\uac01"],
    # Composed and component forms of scripts newer than Unicode 14 (Kirat
    # Rai, Gurung Khema, Tulu-Tigalari, Kawi, Nag Mundari): Unicode 16
    # composes or reorders them, CPython 3.11 does not know them.
    ["\U00016D63", "\U00016D67", "\U00016D68", "\U00016D69", "\U00016D6A",
     "\U0001611E", "\U0001611F", "\U00016121", "\U00016122", "\U00016129",
     "\U00011382", "\U000113C2", "\U000113B8", "\U000113C5", "\U000113C7",
     "\U00011F41", "\U00011F42", "\U0001E4EC", "\U0001E4EF", "\U0001E4D0"],
]
with open("crates/core/tests/cpython/nfc.jsonl", "w", encoding="utf-8") as out:
    for _ in range(3000):
        s = "".join(random.choice(random.choice(GROUPS)) for _ in range(random.randint(1, 6)))
        out.write(json.dumps({"s": s, "nfc": unicodedata.normalize("NFC", s)}, ensure_ascii=False) + "\n")
