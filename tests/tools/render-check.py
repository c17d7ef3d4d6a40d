#!/usr/bin/env python3
"""render-check.py: render every Markdown file as GitHub does (cmark-gfm, GitHub's fork of cmark) and fail on what a reader would see broken.

Usage: tests/tools/render-check.py [--html DIR] FILE.md...
For each file it checks that:
  - it is at most 100 KB (GitHub stops rendering large files; a phone loads the whole page);
  - every heading of the source (outside code blocks) comes out as an <h1>..<h6>, and every table as a <table>;
  - no raw Markdown is left in the HTML outside code: no ``` fence, no "# heading" line, no "|---|" row;
  - every <details> is closed, and no <details> or <summary> came out escaped (as text).
With --html, it also writes each rendered page under DIR, at the file's own path with .html,
wrapped in a page that loads the images from the repository (the browser check opens them).
Prints one line per problem, naming the file, and exits 1 if there is any.
"""
import html
import os
import re
import subprocess
import sys
from pathlib import Path

LIMIT = 100 * 1000
FENCE = re.compile(r'^ {0,3}(```+|~~~+)')
HEADING = re.compile(r'^ {0,3}#{1,6}( |$)')
# A table's delimiter row, with any number of cells (GitHub renders it only if it has as many as the header row).
TABLE_DELIMITER = re.compile(r'^ {0,3}(?=.*\|)\|? *:?-+:? *(\| *:?-+:? *)*\|? *$')


def source_counts(text):
    """Headings and tables in the source, outside fenced code blocks, and the line of a fence never closed."""
    headings = tables = 0
    fence = None
    previous = ''
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and line.strip() == m.group(1):
                fence = None
            continue
        if m:
            fence, opened = m.group(1), n
            continue
        if HEADING.match(line):
            headings += 1
        if TABLE_DELIMITER.match(line) and previous.lstrip().startswith('|'):
            tables += 1
        previous = line
    return headings, tables, opened if fence else None


def render(path):
    return subprocess.run(['cmark-gfm', '--unsafe', '-e', 'table', '-e', 'strikethrough', '-e', 'autolink',
                           str(path)], check=True, capture_output=True, text=True).stdout


def outside_code(rendered):
    return re.sub(r'<pre[^>]*>.*?</pre>|<code>.*?</code>', ' ', rendered, flags=re.S)


def check(path):
    problems = []
    size = path.stat().st_size
    if size > LIMIT:
        problems.append(f'{size} bytes, over the 100 KB limit: split it into chapters (book/chapters.txt)')
    text = path.read_text(encoding='utf-8')
    rendered = render(path)
    headings, tables, unclosed = source_counts(text)
    if unclosed:
        problems.append(f'the code block opened at line {unclosed} is never closed: the rest of the file renders as code')
    got_headings = len(re.findall(r'<h[1-6][ >]', rendered))
    got_tables = rendered.count('<table>')
    if got_headings != headings:
        problems.append(f'{headings} headings in the source, {got_headings} rendered (an unclosed code block or HTML block?)')
    if got_tables != tables:
        problems.append(f'{tables} tables in the source, {got_tables} rendered (a table with a missing cell or blank line?)')
    prose = outside_code(rendered)
    for n, line in enumerate(prose.split('\n'), 1):
        text_line = html.unescape(re.sub(r'<[^>]+>', '', line))
        if '```' in text_line:
            problems.append(f'a raw code fence in the rendered page: "{text_line.strip()[:80]}"')
        elif HEADING.match(text_line) and text_line.strip() not in ('#',) and not line.startswith('<h'):
            problems.append(f'a raw heading in the rendered page: "{text_line.strip()[:80]}"')
        elif TABLE_DELIMITER.match(text_line):
            problems.append(f'a raw table row in the rendered page: "{text_line.strip()[:80]}"')
    opened, closed = len(re.findall(r'<details>', prose)), len(re.findall(r'</details>', prose))
    if opened != closed:
        problems.append(f'{opened} <details> opened, {closed} closed')
    if re.search(r'&lt;/?(details|summary)', prose):
        problems.append('a <details> or <summary> tag came out as text (indented, or inside a paragraph)')
    return size, rendered, problems


# Once the page has loaded, a line at its end says how many images it has and which did not load
# (the browser check reads it from the DOM that chromium --dump-dom prints).
IMAGE_CHECK = ('<script>window.addEventListener("load", () => { const broken = [...document.images]'
               '.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src); document.body.insertAdjacentHTML('
               '"beforeend", "<p id=\\"image-check\\">images: " + document.images.length + ", not loaded: " + broken.length'
               ' + " " + broken.join(" ") + "</p>"); });</script>')


def page(title, body):
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<style>body{font-family:sans-serif,"Noto Sans CJK SC";max-width:900px;margin:2em auto;line-height:1.5}'
            'pre{background:#f6f8fa;padding:1em;overflow:auto}table{border-collapse:collapse}'
            'td,th{border:1px solid #ccc;padding:4px}img{max-width:100%}</style></head>'
            f'<body>{body}{IMAGE_CHECK}</body></html>')


def main(argv):
    out_dir = None
    if argv[:1] == ['--html']:
        out_dir, argv = Path(argv[1]), argv[2:]
    if not argv:
        print(__doc__.split('\n\n')[1], file=sys.stderr)
        return 2
    failed = 0
    for name in argv:
        path = Path(name)
        size, rendered, problems = check(path)
        for p in problems:
            print(f'render-check: {name}: {p}')
        failed += bool(problems)
        if out_dir:
            target = out_dir / (name[:-3] + '.html')
            target.parent.mkdir(parents=True, exist_ok=True)
            # Links between chapters go to the rendered twins; images stay where they are.
            body = re.sub(r'href="([^"#:]+)\.md(#[^"]*)?"', r'href="\1.html\2"', rendered)
            body = re.sub(r'src="(?![a-z]+:)([^"]+)"',
                          lambda m: f'src="{os.path.relpath(Path.cwd() / path.parent / m.group(1), target.parent)}"', body)
            target.write_text(page(name, body), encoding='utf-8')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
