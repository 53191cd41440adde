#!/usr/bin/env python3
"""Write crates/core/tests/cpython/classes.jsonl: random patterns of classes, shorthand
classes (\\w \\W \\s \\S \\d \\D), word boundaries and literals, searched in
short texts of characters where Unicode case folding, CPython's classes and
`regex`'s disagree (U+0345, the Kelvin sign, long s, dotted and dotless i,
letters new in Unicode 16, ...), each with CPython's answer with and without
re.IGNORECASE. The unit test `gate::pyre::tests::classes_match_cpython`
holds critic-gate's port to every answer. Run with CPython 3.11 (symfonic's)
from the repository root; the seed is fixed, so the file only changes when
this script does."""
import json
import random
import re

random.seed(7)
POOL = ['a', 'b', 'k', 'K', '\u212a', 's', 'S', '\u017f', 'i', 'I', '\u0130', '\u0131',
        '\u0345', '\u03b9', '\u0399', '\u1fbe', '\ua7cb', '\u0264', '\ua7dc', '\u019b',
        '0', '5', '\u0663', ' ', '\t', '.', '-', '_', '\u00e9', '\u0307', '\u1c80',
        '\u00df', '\u1e9e', 'x', 'o', 'ok']
ITEMS = [r'\w', r'\W', r'\s', r'\S', r'\d', r'\D', 'a', 'k', 's', 'i', '.', '_', '-',
         '\u03b9', '\u0345', 'a-f', '\u0130', '0-9']


def klass():
    body = ''.join(random.choice(ITEMS) for _ in range(random.randint(1, 3)))
    if body.startswith('-') or body.endswith('-'):
        body = body.replace('-', '') or 'a'
    return '[' + ('^' if random.random() < 0.4 else '') + body + ']'


def atom():
    r = random.random()
    if r < 0.35:
        return klass()
    if r < 0.55:
        return random.choice([r'\w', r'\W', r'\b', r'\B', r'\s', r'\d'])
    return random.choice(['a', 'k', 'i', 'ok', 'x', '\u03b9', 's'])


with open('crates/core/tests/cpython/classes.jsonl', 'w', encoding='utf-8') as out:
    written = 0
    while written < 3000:
        p = ''.join(atom() for _ in range(random.randint(1, 3)))
        t = ''.join(random.choice(POOL) for _ in range(random.randint(0, 6)))
        try:
            case = {'p': p, 't': t,
                    'i': bool(re.compile(p, re.IGNORECASE).search(t)),
                    'cs': bool(re.compile(p).search(t))}
        except re.error:
            continue
        out.write(json.dumps(case, ensure_ascii=False) + '\n')
        written += 1
