#!/usr/bin/env python3
"""verbs-share.py: how much of a C file is verbs: the share of its code lines that name a verb or build a WR.

Usage: tests/tools/verbs-share.py FILE...     one line per file, then the files together

A line counts as code when it is neither blank nor wholly comment (a block comment's lines, or
// ...).  A code line counts as verbs when it names libibverbs or librdmacm (ibv_..., rdma_...,
IBV_...), or sets a field of a work request or a scatter-gather element: opcode, sg_list,
num_sge, send_flags, imm_data, wr_id, remote_addr, rkey.  By this count rdma-core's
libibverbs/examples/rc_pingpong.c (at commit 691953d, 2026-08-20) is 153 of 1,037 code lines,
15%: a whole program, its options and its side channel included.
"""
import re
import sys

VERBS = re.compile(r"\b(ibv|rdma)_|\bIBV_")
WR_FIELD = re.compile(r"[.>](opcode|sg_list|num_sge|send_flags|imm_data|wr_id|remote_addr|rkey)\s*=(?!=)")


def code_lines(text):
    """The lines of TEXT that hold code, comments taken out."""
    out, in_block = [], False
    for line in text.splitlines():
        code, i = "", 0
        while i < len(line):
            if in_block:
                end = line.find("*/", i)
                if end < 0:
                    i = len(line)
                else:
                    in_block, i = False, end + 2
            elif line.startswith("/*", i):
                in_block, i = True, i + 2
            elif line.startswith("//", i):
                break
            elif line[i] == '"':
                # A string: copied whole, so that a /* inside it opens no comment.
                j = i + 1
                while j < len(line) and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                code, i = code + line[i:j + 1], j + 1
            else:
                code, i = code + line[i], i + 1
        if code.strip():
            out.append(code)
    return out


def share(path):
    with open(path, encoding="utf-8") as f:
        lines = code_lines(f.read())
    verbs = sum(1 for line in lines if VERBS.search(line) or WR_FIELD.search(line))
    return verbs, len(lines)


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    total_v = total_n = 0
    for path in argv:
        v, n = share(path)
        total_v, total_n = total_v + v, total_n + n
        print(f"{path}: {v} of {n} code lines are verbs, {100 * v / max(n, 1):.0f}%")
    if len(argv) > 1:
        print(f"together: {total_v} of {total_n} code lines are verbs, {100 * total_v / max(total_n, 1):.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
