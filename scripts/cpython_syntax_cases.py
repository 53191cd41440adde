#!/usr/bin/env python3
"""Write crates/core/tests/cpython/syntax.jsonl: random patterns built from the pieces
where CPython's `re` parser decides what a pattern means or whether it is
one at all (quantifiers after quantifiers, lazy and possessive suffixes,
repeats of nothing and of anchors, braces that are and are not repeats,
class ranges whose ends are classes, groups, look-arounds, atomic groups,
alternation, escapes), each with CPython 3.11's verdict: its error
message, or whether it matches each of a few texts with and without
re.IGNORECASE. The unit test `gate::pyre::tests::syntax_matches_cpython`
holds critic-gate's port to every verdict: a pattern CPython rejects must
be refused, one it accepts must match as it does (or be refused as one
critic-gate cannot replay). Run with CPython 3.11 (symfonic's) from the
repository root; the seed is fixed, so the file only changes when this
script does."""
import json
import random
import re
import sys
import warnings

assert sys.version_info[:2] == (3, 11), "CPython 3.11, as symfonic runs"

warnings.simplefilter("ignore", FutureWarning)  # "Possible set difference"
random.seed(11)
ATOMS = ['a', 'o', 'k', 'b', '.', 'ok', r'\d', r'\w', r'\s', r'\.', '-', 'z',
         '(?:a|ab)', '(?:o|oa)', '(?:ok|o)', '(?:ab)']
CLASSES = ['[a-z]', '[ok]', '[^o]', r'[\w-z]', r'[\d-z]', r'[\w--k]', r'[a-\d]',
           '[z-a]', '[a-]', '[-a]', '[]a]', r'[\w.]', '[o-o]', r'[a\-z]', '[^]o]',
           r'[\s\d]', '[--/]', r'[\b]', '[a-b-c]']
QUANTS = ['*', '+', '?', '{2}', '{1,3}', '{,2}', '{2,}', '{3,1}', '{x}', '{', '{1,2',
          '{0}', '{,}']
SUFFIXES = ['', '', '', '?', '+', '*', '{2}']
ANCHORS = ['^', '$', r'\b', r'\B', r'\A', r'\Z']
OPEN = ['(', '(?:', '(?=', '(?!', '(?<=o)', '(?<!a)', '(?>', '(?#c)', '(?P<n>']
TEXTS = ['', 'o', 'oo', 'ooo', 'ok', 'OK ok', 'aab', 'a-b', 'zk', 'b\nk', 'k.z', '12',
         'abab', 'ooa', 'aba', 'ook']


def piece():
    r = random.random()
    if r < 0.30:
        return random.choice(ATOMS)
    if r < 0.45:
        return random.choice(CLASSES)
    if r < 0.70:
        return random.choice(QUANTS) + random.choice(SUFFIXES)
    if r < 0.80:
        return random.choice(ANCHORS)
    if r < 0.90:
        return random.choice(OPEN)
    if r < 0.95:
        return ')'
    return '|'


def pattern():
    p = ''.join(piece() for _ in range(random.randint(1, 6)))
    # Close most groups left open, so that more patterns are valid.
    opened = p.count('(') - p.count('(?#') - p.count(')')
    if opened > 0 and random.random() < 0.8:
        p += ')' * opened
    return p


def main():
    seen = set()
    written = errors = 0
    with open('crates/core/tests/cpython/syntax.jsonl', 'w', encoding='utf-8') as out:
        while written < 3000:
            p = pattern()
            if p in seen or '(?P<n>' in p and p.count('(?P<n>') > 1:
                continue
            seen.add(p)
            try:
                ri = re.compile(p, re.IGNORECASE)
                rc = re.compile(p)
            except re.error as e:
                # Two in five cases are errors at most: most are valid.
                if errors >= 1200:
                    continue
                case = {'p': p, 'error': e.msg}
                errors += 1
            else:
                case = {'p': p,
                        'i': [bool(ri.search(t)) for t in TEXTS],
                        'cs': [bool(rc.search(t)) for t in TEXTS]}
            out.write(json.dumps(case, ensure_ascii=False) + '\n')
            written += 1
    print(f'{written} cases, {errors} of them errors; texts: {json.dumps(TEXTS)}')


main()
