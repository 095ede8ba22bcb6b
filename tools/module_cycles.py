#!/usr/bin/env python3
"""Report import cycles between the crate's source files.

Every `crate::`, `super::` and `self::` path in a file, and every path that starts with one of
the file's own child modules (in `use` items, including nested `{...}` groups, and in
expressions), is resolved to the source file that defines what it names: the deepest module on
the path, or, where that module only re-exports the item (`pub use`), the module the item comes
from. A file's inline unit-test module is part of the file, and modules declared under
`#[cfg(test)]` are left out; `mod x;` declarations are not imports. The files and their edges form a graph;
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
    # A file's unit tests (an inline `mod tests` at its end) belong to the file itself.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    text = text[: cut.start()] if cut else text
    # Inside an inline `mod x { ... }`, `super::` names the file's own module.
    out, i = [], 0
    for m in re.finditer(r"\bmod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        depth, j = 0, m.end() - 1
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        out.append(text[i : m.end()])
        out.append(re.sub(r"\bsuper::", "self::", text[m.end() : j]))
        i = j
    out.append(text[i:])
    return "".join(out)


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


def paths_in(text, children):
    """Paths from the crate root, `super`, `self` or one of the module's own child modules."""
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        for p in expand([], m.group(1)):
            if p and p[0] in children:
                p = ["self"] + p
            yield p
    for m in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", text):
        yield m.group(1).split("::")
    for m in re.finditer(r"(?<![\w:])(\w+)((?:::\w+)+)", text):
        if m.group(1) in children:
            yield ["self", m.group(1)] + m.group(2).split("::")[1:]


def resolve(mod, path, modules):
    """The module a path names, or the module that defines the item it names."""
    cur = list(mod)
    parts = list(path)
    if parts[0] == "crate":
        cur, parts = [], parts[1:]
    else:
        while parts and parts[0] in ("super", "self"):
            if parts[0] == "super":
                cur = cur[:-1]
            parts = parts[1:]
    rest = parts
    for i, p in enumerate(parts):
        cand = tuple(cur + [p])
        if cand in modules:
            cur.append(p)
            rest = parts[i + 1 :]
        else:
            break
    here = tuple(cur)
    if rest and DEPTH[0] < 8:
        DEPTH[0] += 1
        try:
            return REEXPORTS.get(here, {}).get(rest[0], lambda: here)()
        finally:
            DEPTH[0] -= 1
    return here


DEPTH = [0]
# Per module: name -> thunk resolving the module that defines a re-exported item.
REEXPORTS = {}


def collect_reexports(m, text, modules, children):
    table = {}
    for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
        for full in re.findall(r"[^,{}]+", u.group(1)):
            pass
        for p in expand([], u.group(1)):
            if not p:
                continue
            alias = p[-1]
            last = re.split(r"\s+as\s+", u.group(1))
            if p[0] in children:
                p = ["self"] + p
            if p[0] not in ("crate", "super", "self"):
                continue
            table[alias] = (lambda m=m, p=p: resolve(m, p, modules))
    REEXPORTS[m] = table
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
    # Modules declared under `#[cfg(test)]` (`#[cfg(test)] mod x;`) are tests, not part of the
    # library's structure.
    for m, p in list(files.items()):
        text = open(p, encoding="utf-8").read()
        for t in re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            files.pop(m + (t,), None)
    modules = set(files)
    edges = {(m[:1] if top else m): set() for m in modules}
    texts, kids = {}, {}
    for m, p in files.items():
        texts[m] = strip_comments(open(p, encoding="utf-8").read())
        kids[m] = {c[-1] for c in modules if len(c) == len(m) + 1 and c[: len(m)] == m}
        collect_reexports(m, texts[m], modules, kids[m])
    for m in files:
        text, children = texts[m], kids[m]
        for path in paths_in(text, children):
            if not path or path[0] not in ("crate", "super", "self"):
                continue
            t = resolve(m, path, modules)
            if top:
                a, b = m[:1], t[:1]
            else:
                a, b = m, t
            if a != b:
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
