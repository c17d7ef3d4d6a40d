#!/usr/bin/env python3
"""terms.py: refuse the Chinese terms that book/terms.zh-CN.tsv replaces, in every Chinese chapter, the Chinese entry page, the Chinese figures' sources and INTERVIEW.md's Chinese, outside code; and a term glossed with itself.

Usage: tests/tools/terms.py [FILE...]   (default: tests/tools/chapters.sh zh-CN, README.zh-CN.md, diagrams/*.zh-CN.dot and INTERVIEW.md)
Prints "FILE:LINE: 'REFUSED': the book says 'TERM' (IDEA)" for each use, and
"FILE:LINE: 'X（X）': a term glossed with itself: keep one" for each duplicated gloss; exits 1 if any.
A refused term that begins and ends with a Latin letter (an English word such as 'immediate') counts only
as a whole word, case and all: 'immediately' and the spec's capitalized opcode names ('Last with Immediate')
are not it.  A refused term in brackets right after the book's term, TERM（REFUSED）, is a gloss, not a use.
In INTERVIEW.md only its Chinese is read: lines with a Han character, and of its
tables the third column.  In the glossary (glossary.zh-CN.md) a table's second column begins with the
English that the row's Chinese stands for: it is read from its first Han character on.  Fenced code blocks,
`inline code` and the generated blocks (<!-- BEGIN generated --> to <!-- END generated -->, made from the
code's own English) are skipped.
"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HAN = re.compile(r'[\u4e00-\u9fff]')


def load_terms():
    terms = []
    for line in (ROOT / "book" / "terms.zh-CN.tsv").read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        refused, term, idea, where = line.split("\t")
        terms.append((refused, term, idea, where))
    return terms


def chinese_lines(path):
    """(number, text) of the lines to check: outside fences, inline code removed."""
    interview = path.name == "INTERVIEW.md"
    fence = generated = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("<!-- BEGIN generated"):
            generated = True
        elif line.startswith("<!-- END generated"):
            generated = False
        if line.startswith("```"):
            fence = not fence
            continue
        if fence or generated:
            continue
        if interview:
            if not HAN.search(line):
                continue
            if line.startswith("|"):
                cells = line.split("|")
                line = cells[3] if len(cells) > 3 else ""
        elif path.name == "glossary.zh-CN.md" and line.startswith("|"):
            cells = line.split("|")
            if len(cells) > 2:
                han = HAN.search(cells[2])
                cells[2] = cells[2][han.start():] if han else ""
                line = "|".join(cells)
        yield n, re.sub(r'`[^`]*`', '', line)


def refusals(terms):
    """(pattern, refused, term, idea, where) for each row: a Latin word whole, anything else as it stands;
    TERM（REFUSED）, the book's term glossed with the refused one, left out."""
    out = []
    for refused, term, idea, where in terms:
        pattern = re.escape(refused)
        if re.match(r'[A-Za-z]', refused) and re.search(r'[A-Za-z]$', refused):
            pattern = r'(?<![A-Za-z])' + pattern + r'(?![A-Za-z])'
        gloss = re.escape(term) + r'[*_]* ?[（(][^（）()]*?$'
        out.append((re.compile(pattern), re.compile(gloss), refused, term, idea, where))
    return out


# A gloss that repeats its term, X（X）: what a term swapped in both places leaves.
BRACKET = re.compile(r'[（(]([^（）()]*)[）)]')
WORD = re.compile(r'[A-Za-z\u4e00-\u9fff]')


def duplicated_glosses(text):
    for m in BRACKET.finditer(text):
        inner = m.group(1).strip().strip('*_').strip()
        before = text[:m.start()].rstrip().rstrip('*_').rstrip()
        if WORD.search(inner) and before.endswith(inner):
            yield "%s（%s）" % (inner, inner)


def main(argv):
    files = [Path(f) for f in argv] or [ROOT / f for f in subprocess.run(
        [str(ROOT / "tests" / "tools" / "chapters.sh"), "zh-CN"], capture_output=True, text=True, check=True,
        cwd=ROOT).stdout.split()] + [ROOT / "README.zh-CN.md"] + sorted((ROOT / "diagrams").glob("*.zh-CN.dot")) + [ROOT / "INTERVIEW.md"]
    terms = refusals(load_terms())
    found = 0
    for path in files:
        for n, text in chinese_lines(path):
            for pattern, gloss, refused, term, idea, where in terms:
                if where not in ("all", path.name):
                    continue
                if any(not gloss.search(text[:m.start()]) for m in pattern.finditer(text)):
                    print("%s:%d: '%s': the book says '%s' (%s)" % (path, n, refused, term, idea))
                    found += 1
            for dup in duplicated_glosses(text):
                print("%s:%d: '%s': a term glossed with itself: keep one" % (path, n, dup))
                found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
