#!/usr/bin/env python3
"""List functions longer than a limit, outside unit-test modules.

A function's length is counted from its `fn` line to its closing brace. Everything after a
file's `#[cfg(test)]` module is skipped: tests may be long. Exit status 1 when any function is
over the limit.

Usage: tools/fn_lengths.py [--max N] DIR...   (default N = 120)
"""
import os
import re
import sys

FN = re.compile(r'\s*(pub(\([^)]*\))?\s+)?(const\s+)?(unsafe\s+)?(extern "C"\s+)?fn\s+(\w+)')


def lengths(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", lines[i]):
            return
        m = FN.match(lines[i])
        if m:
            depth, started, j = 0, False, i
            while j < len(lines):
                code = re.sub(r"//.*", "", lines[j])
                code = re.sub(r"'([^'\\]|\\.)'", "''", code)
                for ch in code:
                    if ch == "{":
                        depth, started = depth + 1, True
                    elif ch == "}":
                        depth -= 1
                if started and depth == 0:
                    break
                if not started and code.rstrip().endswith(";"):
                    break
                j += 1
            if started:
                yield j - i + 1, i + 1, m.group(6)
        i += 1


def main():
    args = sys.argv[1:]
    limit = 120
    if args[:1] == ["--max"]:
        limit, args = int(args[1]), args[2:]
    over = []
    for top in args or ["src"]:
        for root, _, names in os.walk(top):
            for n in sorted(names):
                if n.endswith(".rs"):
                    p = os.path.join(root, n)
                    over += [(k, p, line, name) for k, line, name in lengths(p) if k > limit]
    for k, p, line, name in sorted(over, reverse=True):
        print(f"{p}:{line}: fn {name} is {k} lines (limit {limit})")
    if not over:
        print(f"no function over {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
