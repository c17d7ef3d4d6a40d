#!/usr/bin/env python3
"""terms.py: refuse the Chinese terms that book/terms.zh-CN.tsv replaces, in every Chinese chapter, the Chinese entry page, the Chinese figures' sources and INTERVIEW.md's Chinese, outside code.

Usage: tests/tools/terms.py [FILE...]   (default: tests/tools/chapters.sh zh-CN, README.zh-CN.md, diagrams/*.zh-CN.dot and INTERVIEW.md)
Prints "FILE:LINE: 'REFUSED': the book says 'TERM' (IDEA)" for each use; exits 1 if any.
In INTERVIEW.md only its Chinese is read: lines with a Han character, and of its
tables the third column.  Fenced code blocks, `inline code` and the generated blocks
(<!-- BEGIN generated --> to <!-- END generated -->, made from the code's own English) are skipped.
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
        yield n, re.sub(r'`[^`]*`', '', line)


def main(argv):
    files = [Path(f) for f in argv] or [ROOT / f for f in subprocess.run(
        [str(ROOT / "tests" / "tools" / "chapters.sh"), "zh-CN"], capture_output=True, text=True, check=True,
        cwd=ROOT).stdout.split()] + [ROOT / "README.zh-CN.md"] + sorted((ROOT / "diagrams").glob("*.zh-CN.dot")) + [ROOT / "INTERVIEW.md"]
    terms = load_terms()
    found = 0
    for path in files:
        for n, text in chinese_lines(path):
            for refused, term, idea, where in terms:
                if refused in text and where in ("all", path.name):
                    print("%s:%d: '%s': the book says '%s' (%s)" % (path, n, refused, term, idea))
                    found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
