"""The project's own import graph, read from the source (not imported), for tests/project/test_layers.py
and tests/project/test_store_layers.py, and the copies of the tree their negative controls break.

Every import statement counts, including those inside functions and under
``if TYPE_CHECKING``: a cycle hidden in a function body is still a cycle.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGES = ("store", "tui", "screens")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def copy_tree(root: Path, dest: Path) -> Path:
    """A copy of the project's packages and pyproject.toml under *dest*, to break on purpose."""
    for top in PACKAGES:
        shutil.copytree(root / top, dest / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", dest / "pyproject.toml")
    return dest


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts (pyproject [tool.importlinter]) over the tree at *root*."""
    env = dict(os.environ, PYTHONPATH=str(root))   # a copy shadows the installed tree
    return subprocess.run([str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def modules(root: Path) -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for top in PACKAGES:
        for f in sorted((root / top).rglob("*.py")):
            rel = f.relative_to(root).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            mods[".".join(parts)] = f
    return mods


def _targets(mods: dict[str, Path], cur: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    pkg = cur if mods[cur].name == "__init__.py" else cur.rpartition(".")[0]
    base = node.module or ""
    if node.level:
        parts = pkg.split(".")
        if node.level > 1:
            parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]


def edges(root: Path) -> dict[str, set[str]]:
    """module -> the project modules it imports anywhere in its body."""
    mods = modules(root)
    out: dict[str, set[str]] = {}
    for name, f in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for t in _targets(mods, name, node):
                while t and t not in mods and "." in t:
                    t = t.rpartition(".")[0]
                # A package's __init__ importing its own submodules is not a cycle.
                if t in mods and t != name and not (mods[name].name == "__init__.py" and t.startswith(name + ".")):
                    deps.add(t)
        out[name] = deps
    return out


def cycles(root: Path) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph = edges(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def local_imports(root: Path) -> list[str]:
    """``path:line`` of every import made inside a function body."""
    hits = []
    for f in modules(root).values():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        hits.append(f"{f.relative_to(root)}:{node.lineno}")
    return sorted(set(hits))


def private_uses(root: Path) -> list[str]:
    """``file:line name`` for every use of another project module's private (``_x``) name:
    ``from mod import _x``, or ``mod._x`` where ``mod`` was imported as a project module."""
    mods = modules(root)
    hits: list[str] = []
    for name, f in mods.items():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        bound: dict[str, str] = {}     # local name -> project module it was imported as
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for a, target in zip(node.names, _targets(mods, name, node), strict=True):
                    if target in mods and target.endswith("." + a.name):
                        bound[a.asname or a.name] = target           # a module imported by name
                    elif a.name.startswith("_") and not a.name.startswith("__") and target != name:
                        hits.append(f"{f.relative_to(root)}:{node.lineno} {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        bound[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in bound and node.attr.startswith("_")
                    and not node.attr.startswith("__") and bound[node.value.id] != name):
                hits.append(f"{f.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}")
    return sorted(set(hits))


def store_package(module: str, root: Path) -> str:
    """The part of store/ a module belongs to: its subpackage, or ``core`` for the flat core."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (root / "store" / parts[1]).is_dir() else "core"


def store_package_pairs(root: Path) -> list[tuple[str, str]]:
    """The pairs of store/'s parts (each subpackage, and the flat core) that import each other,
    counting every import a module makes anywhere in its body."""
    deps: dict[str, set[str]] = {}
    for name, targets in edges(root).items():
        if name.split(".")[0] != "store" or name == "store":
            continue
        src = store_package(name, root)
        deps.setdefault(src, set()).update(
            dst for t in targets if t.split(".")[0] == "store" and t != "store"
            and (dst := store_package(t, root)) != src)
    return sorted((a, b) for a in deps for b in deps[a] if a < b and a in deps.get(b, ()))
