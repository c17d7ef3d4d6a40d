#!/usr/bin/env python3
"""tutorial-parity.py: check that a translation of TUTORIAL.md (TUTORIAL.zh-CN.md) keeps step with the English, section by section.

Usage: tests/tools/tutorial-parity.py ENGLISH.md TRANSLATION.md          check; prints each difference, exits 1 if any
       tests/tools/tutorial-parity.py --stamp ENGLISH.md TRANSLATION.md  after translating a change: record, under each
                                                                   heading, which English text the section translates

The two files must have the same headings, at the same levels, in the same order; heading i of one is the
counterpart of heading i of the other, and a section is the text from one heading to the next.  In each pair
of sections the check compares:
  - code blocks: every fenced block byte-identical, in the same order (the demo reads their comments);
  - comment lines (<!-- ... -->), such as the generated-code markers, identical and in order; what stands
    between the generated markers is left to tests/tools/tutorial-diffs.sh, which writes it into both files;
  - inline code: the same set of `code` spans (headings' own spans too);
  - links: the same targets; an #anchor counts as the heading it resolves to, so the translation's anchors
    are those of its own headings; a link to a chapter's translation (NAME.zh-CN.md) counts as one to the chapter;
  - figures (images): the same ones, each in its own language: where the English shows diagrams/NAME.svg the
    translation shows its twin diagrams/NAME.zh-CN.svg, and the English figure there, if it has a twin, is named
    as a difference, as is a translated figure in the English;
  - tables: the same rows and columns, and the same `code` spans in each cell;
  - figures in the prose, both ways: numbers with their units (40 bytes = 40 字节 = 40 B), hexadecimal
    values, and formula-like tokens (2(N-1)/N, ConnectX-7);
  - the stamp: once the translation carries a "<!-- source: HASH -->" line under each heading, HASH must be
    the English section's text hash, so that a change to the English prose alone is caught too.
"""
import re
import subprocess
import sys
import hashlib
from pathlib import Path

GENERATED_BEGIN = re.compile(r'^<!-- BEGIN generated ')
GENERATED_END = re.compile(r'^<!-- END generated ')
STAMP = re.compile(r'^<!-- source: ([0-9a-f]{12}) -->$')
HEADING = re.compile(r'^(#{1,6}) +(.*?) *#* *$')
FENCE = re.compile(r'^(```|~~~)')
CODE_SPAN = re.compile(r'(`+)(.+?)(?<!`)\1(?!`)')
LINK = re.compile(r'!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\)')
HTML_TAG = re.compile(r'</?[A-Za-z][^>]*>')
# A chapter and its translation name each other's twins: a link to either counts as one target.
TWIN = re.compile(r'\.zh-CN\.md$')
# A figure and its translation: diagrams/NAME.svg is the English, diagrams/NAME.zh-CN.svg its twin.  Each edition
# shows its own: the twin in the translation counts as the English figure in the English.
FIGURE = re.compile(r'\.(svg|png|jpe?g|gif)$', re.I)
FIGURE_TWIN = re.compile(r'\.zh-CN(\.(svg|png|jpe?g|gif))$', re.I)

# Units: what a number may carry, and the one spelling each counts as.  Longest first within a regex.
UNIT_ALIASES = {
    'B': ['bytes', 'byte', '字节', 'B'],
    'bit': ['bits', 'bit', '比特', '位'],
    'KiB': ['KiB'], 'MiB': ['MiB'], 'GiB': ['GiB'], 'TiB': ['TiB'],
    'kB': ['kB'], 'KB': ['KB'], 'MB': ['MB'], 'GB': ['GB'], 'TB': ['TB'],
    'Gb/s': ['Gbit/s', 'Gb/s', 'Gbps'], 'Tb/s': ['Tb/s'], 'MB/s': ['MB/s'], 'GB/s': ['GB/s'], 'TB/s': ['TB/s'],
    'GT/s': ['GT/s'], 'MT/s': ['MT/s'], 'Mpps': ['Mpps'], 'GHz': ['GHz'], 'MHz': ['MHz'], 'W': ['W'],
    'ns': ['nanoseconds', 'ns', '纳秒'],
    'µs': ['microseconds', 'µs', 'us', '微秒'],
    'ms': ['milliseconds', 'ms', '毫秒'],
    's': ['seconds', 'second', 's', '秒'],
    'min': ['minutes', 'minute', 'min', '分钟'],
    'h': ['hours', 'hour', 'h', '小时'],
    'x': ['x', '×', '倍'],
    '%': ['%'],
}
CANONICAL_UNIT = {alias: unit for unit, aliases in UNIT_ALIASES.items() for alias in aliases}
UNIT_PATTERN = '|'.join(re.escape(a) for a in sorted(CANONICAL_UNIT, key=len, reverse=True))
NUMBER_WITH_UNIT = re.compile(
    r'(?<![A-Za-z0-9_.,/\-])(\d+(?:[.,]\d+)*)(?: |-)?(' + UNIT_PATTERN + r')(?![A-Za-z0-9_])')
HEX = re.compile(r'(?<![A-Za-z0-9_])0x[0-9a-fA-F]+(?![A-Za-z0-9_])')
FORMULA_TOKEN = re.compile(r'[A-Za-z0-9_()·/^×*+=−\-.]+')
OPERATOR = re.compile(r'[()·/^×*+=−\-]')
# The section whose reading times each language counts from its own text (words at 200 a minute, Chinese
# characters at 400): its times in minutes and hours may differ between the two.
READING_TIMES = 'How to read this'


class Section:
    def __init__(self, level, text, line):
        self.level, self.text, self.line = level, text, line
        self.source = []          # the section's lines, generated content left out (what the stamp hashes)
        self.code_blocks = []     # (first line number, text)
        self.comments = []
        self.prose = []           # (line number, text) of lines outside code blocks
        self.tables = []          # each a list of (line number, [cells])
        self.stamp = None


def split_cells(row):
    """A table row's cells, split on | outside code spans."""
    cells, cell, in_code, i = [], '', False, 0
    row = row.strip()
    if row.startswith('|'):
        row = row[1:]
    if row.endswith('|') and not row.endswith('\\|'):
        row = row[:-1]
    while i < len(row):
        c = row[i]
        if c == '`':
            in_code = not in_code
        if c == '\\' and i + 1 < len(row) and row[i + 1] == '|':
            cell += '|'
            i += 2
            continue
        if c == '|' and not in_code:
            cells.append(cell.strip())
            cell = ''
        else:
            cell += c
        i += 1
    cells.append(cell.strip())
    return cells


def parse(path):
    """The file's sections: a preamble (level 0) and one per heading outside code blocks."""
    sections = [Section(0, '(before the first heading)', 1)]
    fence = None
    generated = False
    table = None
    block = None
    for n, line in enumerate(Path(path).read_text(encoding='utf-8').split('\n'), 1):
        s = sections[-1]
        if fence:
            block[1].append(line)
            s.source.append(line)
            if line.startswith(fence) and line.strip() == fence:
                s.code_blocks.append((block[0], '\n'.join(block[1])))
                fence = None
            continue
        if generated:
            if GENERATED_END.match(line):
                generated = False
                s.comments.append(line)
                s.source.append(line)
            continue
        m = STAMP.match(line)
        if m:
            s.stamp = (n, m.group(1))
            continue
        if not line.startswith('|'):
            table = None
        if FENCE.match(line):
            fence = FENCE.match(line).group(1)
            block = (n, [line])
            s.source.append(line)
            continue
        m = HEADING.match(line)
        if m:
            s = Section(len(m.group(1)), m.group(2), n)
            sections.append(s)
            s.source.append(line)
            s.prose.append((n, m.group(2)))
            continue
        s.source.append(line)
        if GENERATED_BEGIN.match(line):
            generated = True
            s.comments.append(line)
            continue
        if line.lstrip().startswith('<!--'):
            s.comments.append(line.strip())
            continue
        if line.startswith('|'):
            if table is None:
                table = []
                s.tables.append(table)
            table.append((n, split_cells(line)))
        s.prose.append((n, line))
    return sections


SLUGS = {}


def slugs(path):
    """Each heading's anchor, in order, as tests/tools/check-links.sh (GitHub's rules) gives it."""
    path = str(Path(path).resolve())
    if path not in SLUGS:
        SLUGS[path] = slugs_uncached(path)
    return SLUGS[path]


def shown_path(path):
    try:
        return path.relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def figure_target(resolved, translation):
    """A figure, as the English figure it stands for; a figure in the other edition's language is named apart."""
    m = FIGURE_TWIN.search(resolved.name)
    if m:
        english = shown_path(resolved.with_name(FIGURE_TWIN.sub(r'\1', resolved.name)))
        return f'{english}' if translation else f'{shown_path(resolved)} (the Chinese figure: show {english} here)'
    twin = resolved.with_name(FIGURE.sub(r'.zh-CN.\1', resolved.name))
    if translation and twin.is_file():
        return f'{shown_path(resolved)} (the English figure: show its twin {shown_path(twin)} here)'
    return f'{shown_path(resolved)}'


def other_file_target(target, from_path, translation=False):
    """A link to another file, as the English it stands for: the twin's path, and its anchor as the heading's place."""
    path, _, anchor = target.partition('#')
    resolved = (Path(from_path).parent / path).resolve()
    if FIGURE.search(resolved.name) and not anchor:
        return figure_target(resolved, translation)
    english = resolved.with_name(TWIN.sub('.md', resolved.name))
    shown = shown_path(english)
    if not anchor or resolved.suffix != '.md' or not resolved.is_file():
        return f'{shown}' + (f'#{anchor}' if anchor else '')
    anchors = slugs(resolved)
    if anchor not in anchors:
        return f'{shown}#{anchor} (no such heading)'
    return f'{shown}, heading {anchors.index(anchor) + 1}'


def slugs_uncached(path):
    out = subprocess.run([str(Path(__file__).with_name('check-links.sh')), '--slugs', str(path)],
                         check=True, capture_output=True, text=True).stdout
    return [line.split('\t')[1] for line in out.splitlines()]


def code_spans(text):
    return [m.group(2).strip() for m in CODE_SPAN.finditer(text)]


def without_code(text):
    return CODE_SPAN.sub(' ', text)


def links(text):
    return [m.group(2) for m in LINK.finditer(without_code(text))]


def prose_text(text):
    """What a reader reads: no code spans, link targets or HTML tags."""
    text = without_code(text)
    text = LINK.sub(lambda m: ' ' + m.group(1) + ' ', text)
    return HTML_TAG.sub(' ', text)


def strip_unbalanced(token):
    token = token.strip('*').rstrip('.-·')
    while token.startswith('(') and token.count('(') > token.count(')'):
        token = token[1:]
    while token.endswith(')') and token.count(')') > token.count('('):
        token = token[:-1]
    while token.startswith('(') and token.endswith(')') and token.count('(') == 1:
        token = token[1:-1]
    return token.strip('*').rstrip('.-·')


def figures(text):
    """The figures in a piece of prose, each in one spelling."""
    text = prose_text(text)
    found = set()
    for m in NUMBER_WITH_UNIT.finditer(text):
        found.add(m.group(1) + ' ' + CANONICAL_UNIT[m.group(2)])
    found.update(HEX.findall(text))
    for token in FORMULA_TOKEN.findall(NUMBER_WITH_UNIT.sub(' ', text)):
        token = strip_unbalanced(token)
        if (re.search(r'\d', token) and re.search(r'[A-Z]', token) and OPERATOR.search(token) and '.md' not in token
                and not HEX.fullmatch(token)):
            found.add(token)
    return found


def section_hash(section):
    text = '\n'.join(line.rstrip() for line in section.source).strip('\n')
    return hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]


class Checker:
    def __init__(self, en_path, zh_path):
        self.en_path, self.zh_path = en_path, zh_path
        self.en, self.zh = parse(en_path), parse(zh_path)
        self.problems = []

    def name(self, i):
        """Section i as a reader finds it: its English heading, under its enclosing ones up to the chapter's title."""
        path, level = [], 99
        for s in reversed(self.en[1:i + 1]):
            if s.level < level:
                path.insert(0, s.text)
                level = s.level
        return ' > '.join(path) if path else self.en[0].text

    def report(self, i, what):
        en, zh = self.en[i], self.zh[i]
        self.problems.append(f'section "{self.name(i)}" ({self.en_path} line {en.line}, '
                             f'{self.zh_path} line {zh.line}): {what}')

    def check_headings(self):
        """The same headings at the same levels; at the first difference, say which side has one too many."""
        en = [(s.level, s.line, s.text) for s in self.en[1:]]
        zh = [(s.level, s.line, s.text) for s in self.zh[1:]]
        counts = f'(it has {len(en)} headings, the translation {len(zh)})'
        for k in range(max(len(en), len(zh))):
            if k < len(en) and k < len(zh) and en[k][0] == zh[k][0]:
                continue
            if len(en) > len(zh):
                self.problems.append(f'{self.en_path} line {en[k][1]}: heading "{en[k][2]}" has no counterpart in '
                                     f'{self.zh_path} {counts}: translate it')
            elif len(en) < len(zh):
                self.problems.append(f'{self.zh_path} line {zh[k][1]}: heading "{zh[k][2]}" has no counterpart in '
                                     f'{self.en_path} {counts}')
            else:
                self.problems.append(f'{self.en_path} line {en[k][1]}: heading "{en[k][2]}" is level {en[k][0]}, '
                                     f'but its counterpart, {self.zh_path} line {zh[k][1]} "{zh[k][2]}", is level {zh[k][0]}')
            return False
        return True

    def anchor_maps(self):
        """Anchor to heading index (1-based, as the sections list) for each file."""
        def index(path):
            return {a: k + 1 for k, a in reversed(list(enumerate(slugs(path))))}
        return index(self.en_path), index(self.zh_path)

    def link_targets(self, section, own, other=None, section_path=None):
        targets = set()
        for _, line in section.prose:
            for t in links(line):
                if t.startswith('#'):
                    a = t[1:]
                    if a in own:
                        targets.add(f'the heading "{self.name(own[a])}"')
                    elif other is not None and a in other:
                        targets.add(f'the heading "{self.name(other[a])}"')
                    else:
                        targets.add(t)
                elif re.match(r'^[a-z][a-z0-9+.-]*:', t, re.I):
                    targets.add(t)
                else:
                    targets.add(other_file_target(t, section_path, translation=other is not None))
        return targets

    def compare_sets(self, i, what, en, zh):
        missing, extra = sorted(en - zh), sorted(zh - en)
        if missing:
            self.report(i, f'{what} in the English but not in the translation: ' + ', '.join(missing))
        if extra:
            self.report(i, f'{what} in the translation but not in the English: ' + ', '.join(extra))

    def check_section(self, i, en_anchors, zh_anchors):
        en, zh = self.en[i], self.zh[i]
        if len(en.code_blocks) != len(zh.code_blocks):
            self.report(i, f'{len(en.code_blocks)} code blocks in the English, {len(zh.code_blocks)} in the translation')
        for (en_line, en_code), (zh_line, zh_code) in zip(en.code_blocks, zh.code_blocks):
            if en_code != zh_code:
                for k, (a, b) in enumerate(zip(en_code.split('\n') + [''], zh_code.split('\n') + [''])):
                    if a != b:
                        self.report(i, f'the code block at English line {en_line} differs from its counterpart at '
                                       f'line {zh_line}, first at its line {k + 1}: "{a}" against "{b}"')
                        break
        if en.comments != zh.comments:
            self.report(i, f'comment lines differ: {en.comments} against {zh.comments}')
        self.compare_sets(i, 'inline code', {c for _, l in en.prose for c in code_spans(l)},
                          {c for _, l in zh.prose for c in code_spans(l)})
        self.compare_sets(i, 'links to', self.link_targets(en, en_anchors, section_path=self.en_path),
                          self.link_targets(zh, zh_anchors, en_anchors, section_path=self.zh_path))
        self.check_tables(i)
        en_figures = {f for _, l in en.prose for f in figures(l)}
        zh_figures = {f for _, l in zh.prose for f in figures(l)}
        if en.text == READING_TIMES:
            en_figures = {f for f in en_figures if not re.search(r' (min|h)$', f)}
            zh_figures = {f for f in zh_figures if not re.search(r' (min|h)$', f)}
        self.compare_sets(i, 'figures', en_figures, zh_figures)

    def check_tables(self, i):
        en, zh = self.en[i], self.zh[i]
        if len(en.tables) != len(zh.tables):
            self.report(i, f'{len(en.tables)} tables in the English, {len(zh.tables)} in the translation')
        for t, (et, zt) in enumerate(zip(en.tables, zh.tables), 1):
            if len(et) != len(zt):
                self.report(i, f'table {t} (English line {et[0][0]}) has {len(et)} rows, its translation {len(zt)}')
            for (en_line, ec), (zh_line, zc) in zip(et, zt):
                if len(ec) != len(zc):
                    self.report(i, f'table row at English line {en_line} has {len(ec)} cells, '
                                   f'its counterpart at line {zh_line} has {len(zc)}')
                    continue
                for c, (a, b) in enumerate(zip(ec, zc), 1):
                    if code_spans(a) != code_spans(b) or (re.fullmatch(r':?-+:?', a) and a != b):
                        self.report(i, f'table row at English line {en_line}, cell {c}: code {code_spans(a)} '
                                       f'against {code_spans(b)} at line {zh_line}')

    def check_stamps(self):
        if not any(s.stamp for s in self.zh[1:]):
            return
        for i, (en, zh) in enumerate(zip(self.en[1:], self.zh[1:]), 1):
            if zh.stamp is None:
                self.report(i, 'the translation has no "<!-- source: ... -->" line under this heading: '
                               f'run tests/tools/tutorial-parity.py --stamp {self.en_path} {self.zh_path} once it is translated')
            elif zh.stamp[1] != section_hash(en):
                self.report(i, f'the English changed since this section was translated (its text now hashes to '
                               f'{section_hash(en)}, the translation was made from {zh.stamp[1]}): '
                               f'translate the change, then run tests/tools/tutorial-parity.py --stamp {self.en_path} {self.zh_path}')

    def run(self):
        if self.check_headings():
            en_anchors, zh_anchors = self.anchor_maps()
            for i in range(len(self.en)):
                self.check_section(i, en_anchors, zh_anchors)
            self.check_stamps()
        return self.problems


def stamp(en_path, zh_path):
    """Write each English section's hash under its counterpart heading (after the structure checks pass)."""
    hashes = {s.line: section_hash(e) for s, e in zip(parse(zh_path)[1:], parse(en_path)[1:])}
    out = []
    for n, line in enumerate(Path(zh_path).read_text(encoding='utf-8').split('\n'), 1):
        if STAMP.match(line):
            continue
        out.append(line)
        if n in hashes:
            out.append(f'<!-- source: {hashes[n]} -->')
    Path(zh_path).write_text('\n'.join(out), encoding='utf-8')


def main(argv):
    stamping = argv[:1] == ['--stamp']
    args = argv[1:] if stamping else argv
    if len(args) != 2:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    en_path, zh_path = args
    for p in args:
        if not Path(p).is_file():
            print(f'tutorial-parity: no file {p}', file=sys.stderr)
            return 2
    checker = Checker(en_path, zh_path)
    problems = checker.run()
    if stamping:
        structural = [p for p in problems if 'changed since this section was translated' not in p
                      and 'has no "<!-- source' not in p]
        if structural:
            print('\n'.join(structural))
            print(f'tutorial-parity: not stamping {zh_path}: fix the {len(structural)} differences above first',
                  file=sys.stderr)
            return 1
        stamp(en_path, zh_path)
        return 0
    if problems:
        print('\n'.join(problems), flush=True)
        print(f'tutorial-parity: {len(problems)} differences between {en_path} and {zh_path}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
