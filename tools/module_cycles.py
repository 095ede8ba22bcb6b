#!/usr/bin/env python3
"""Report import cycles between the crate's source files.

Every `crate::`, `super::` and `self::` path in a file (in `use` items, including nested
`{...}` groups, and in expressions) is resolved to the deepest source file that defines the
named module; `mod x;` declarations are not imports. The files and their edges form a graph;
any strongly connected component of more than one file is an import circle, printed with the
edges inside it. Exit status 1 when a circle exists.

Usage: tools/module_cycles.py [SRC_DIR] [--top]   (--top: collapse files to top-level modules)
"""
import os
import re
import sys


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return text


def module_of(path, src):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


def expand(prefix, body):
    """Expand a `use` tree body such as `a::{b, c::{d, e}}` into full paths."""
    out, depth, cur = [], 0, ""
    body = body.strip()
    m = re.match(r"^([\w:]*?)(::)?\{(.*)\}$", body, flags=re.S)
    if m and body.endswith("}"):
        head = [p for p in m.group(1).split("::") if p]
        inner = m.group(3)
        for ch in inner + ",":
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                if cur.strip():
                    out += expand(prefix + head, cur)
                cur = ""
            else:
                cur += ch
        return out
    parts = [p.strip() for p in re.split(r"\s+as\s+", body)[0].split("::") if p.strip()]
    return [prefix + parts]


def paths_in(text):
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for p in expand([], m.group(1)):
            yield p
    for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", text):
        yield m.group(1).split("::")


def resolve(mod, path, modules):
    cur = list(mod)
    parts = list(path)
    if parts[0] == "crate":
        cur, parts = [], parts[1:]
    else:
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                cur = cur[:-1]
            parts = parts[1:]
    best = tuple(cur)
    for p in parts:
        cand = tuple(cur + [p])
        if cand in modules:
            cur.append(p)
            best = cand
        else:
            break
    return best


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    top = "--top" in sys.argv
    src = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "src")
    files = {}
    for root, dirs, names in os.walk(src):
        if os.path.relpath(root, src).startswith("bin"):
            continue
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(root, n)
                files[module_of(p, src)] = p
    modules = set(files)
    edges = {m: set() for m in modules}
    for m, p in files.items():
        text = strip_comments(open(p, encoding="utf-8").read())
        for path in paths_in(text):
            if path[0] not in ("crate", "super", "self"):
                continue
            t = resolve(m, path, modules)
            if top:
                a, b = m[:1], t[:1]
            else:
                a, b = m, t
            if a != b and b != ():
                edges.setdefault(a, set()).add(b)
            edges.setdefault(a, set())
    # Tarjan's strongly connected components.
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in list(edges):
        if v not in index:
            visit(v)
    name = lambda m: "::".join(m) or "crate"
    bad = [c for c in comps if len(c) > 1]
    for c in bad:
        cs = set(c)
        print(f"circle of {len(c)}: " + ", ".join(sorted(name(m) for m in c)))
        for a in sorted(c):
            for b in sorted(edges[a] & cs):
                print(f"  {name(a)} -> {name(b)}")
    if not bad:
        print(f"no import circles among {len(edges)} {'modules' if top else 'files'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
