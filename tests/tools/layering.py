#!/usr/bin/env python3
"""layering.py: fails when a source file of step N names a later step: its number ("step 05"),
its folder or program ("05_poll_destroy"), an option that only a later step defines ("--peer"),
or an identifier that only a later step defines ("rping_peer"), in code or in comments.  Prints
one line per place, FILE:LINE: what it names, and where that is defined.  common/ is the floor
under every step (step 0): it names no step, no step's option, nothing a step or the runtime
declares.  The job runtime (runtime/) stands on stages 1 to 3 (RUNTIME_STANDS_ON, the stages
the Makefile compiles it against) and below every step that launches ranks: where names are
defined it counts as the floor after step 06 (RUNTIME_FLOOR), so no step before 07 may name it,
and it names nothing of step 04 or later.  What a unit defines itself it may name, even where a
later unit defines the same name.  An identifier counts when it has an underscore or a capital:
a plain lowercase word ("barrier", "copy") is English in a comment more often than a name.

Usage: tests/tools/layering.py [ROOT]     (ROOT: the project, by default the folder two above this script)
"""
import os
import re
import subprocess
import sys

# ctags kinds of what a header gives other files by name: macros, enumerators, enum, struct and
# union tags, prototypes, typedefs and extern variables (members are too common as words).  What
# a .c file keeps to itself cannot be named elsewhere: a later step's static is a namesake.
CTAGS_KINDS = "degpstux"
STEP_DIR = re.compile(r"^(\d\d)_[a-z0-9_]+$")
# The runtime's floor: above step 06, below step 07 (the first step that launches ranks).
RUNTIME_FLOOR = 6.5
# The last stage the runtime stands on (the Makefile's RUNTIME_STAGES): it names nothing later.
RUNTIME_STANDS_ON = 3
STEP_WORDS = re.compile(r"\b[Ss]teps? (\d\d(?:(?:, | and | to | or )\d\d)*)\b")
OPTION_DEF = re.compile(r'\{\s*"([a-z][a-z0-9_-]+)",\s*(?:\'.\'|CLI_KEY_\w+|0)\s*,')
OPTION_USE = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]+)")
IDENTIFIER = re.compile(r"\b(?=\w*[_A-Z])[A-Za-z_]\w*\b")


def units(root):
    """(number, name, [files]) for common/ (0) and each step, in order."""
    out = [(0, "common", sources(os.path.join(root, "common")))]
    steps = os.path.join(root, "steps")
    for name in sorted(os.listdir(steps)):
        m = STEP_DIR.match(name)
        if m:
            out.append((int(m.group(1)), name, sources(os.path.join(steps, name))))
    if os.path.isdir(os.path.join(root, "runtime")):
        out.append((RUNTIME_FLOOR, "runtime", sources(os.path.join(root, "runtime"))))
    return sorted(out, key=lambda unit: unit[0])


def floor(number):
    """How a unit is named in a finding: "step 05", or "the runtime"."""
    return "the runtime" if number == RUNTIME_FLOOR else f"step {int(number):02d}"


def reach(number):
    """The last unit whose names a unit may use: the runtime's stages, or the unit itself."""
    return RUNTIME_STANDS_ON if number == RUNTIME_FLOOR else number


def sources(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith((".c", ".h")) and os.path.isfile(os.path.join(folder, f)))


def definitions(files):
    """Identifier -> the first header that declares it, by ctags."""
    files = [f for f in files if f.endswith(".h")]
    if not files:
        return {}
    out = subprocess.run(["ctags", "-x", "--languages=C", "--language-force=C",
                          "--kinds-C=" + CTAGS_KINDS] + files,
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split(None, 4)
        if len(fields) >= 4:
            found.setdefault(fields[0], fields[3])
    return found


def options(files):
    found = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            for name in OPTION_DEF.findall(f.read()):
                found.setdefault(name, path)
    return found


def first_home(unit_list, per_unit):
    """Name -> (unit number, file) of the earliest unit that defines it."""
    home = {}
    for (number, _, _), defs in zip(unit_list, per_unit):
        for name, path in defs.items():
            home.setdefault(name, (number, path))
    return home


def findings(root):
    unit_list = units(root)
    own_ids = [definitions(files) for _, _, files in unit_list]
    own_opts = [options(files) for _, _, files in unit_list]
    ids = first_home(unit_list, own_ids)
    opts = first_home(unit_list, own_opts)
    names = {int(m.group(1)): name for _, name, _ in unit_list if (m := STEP_DIR.match(name))}
    rel = lambda p: os.path.relpath(p, root)
    for (number, _, files), my_ids, my_opts in zip(unit_list, own_ids, own_opts):
        last = reach(number)
        for path in files:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
            for lineno, line in enumerate(lines, 1):
                where = f"{rel(path)}:{lineno}"
                for group in STEP_WORDS.findall(line):
                    for later in (int(n) for n in re.findall(r"\d\d", group)):
                        if later > last:
                            yield f"{where}: names step {later:02d} ('{line.strip()}')"
                for later, name in names.items():
                    if later > last and re.search(rf"\b{re.escape(name)}\b", line):
                        yield f"{where}: names {name}, step {later:02d}'s folder and program"
                for opt in OPTION_USE.findall(line):
                    if opt in opts and opts[opt][0] > last and opt not in my_opts:
                        yield (f"{where}: names --{opt}, an option {floor(opts[opt][0])} "
                               f"defines ({rel(opts[opt][1])})")
                for word in sorted(set(IDENTIFIER.findall(line))):
                    if word in ids and ids[word][0] > last and word not in my_ids:
                        yield (f"{where}: names {word}, defined first in {floor(ids[word][0])} "
                               f"({rel(ids[word][1])})")


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    found = list(findings(root))
    for line in found:
        print(line)
    if found:
        print(f"layering: {len(found)} place(s) where a step names a later step: an earlier step "
              "must read whole without it (move the code to the later step, or pass it in "
              "through a hook; common/ and the runtime likewise)", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
