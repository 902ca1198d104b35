"""The dependency order of the project's packages, checked on the source.

Every package sits in ``ALLOWED`` with the project packages it may import
(lazily or not, type-only imports included). From the bottom:
``switchtarget`` (what every switch target provides: the port-status frame,
the pipeline interface), ``fabricmodel`` and ``rtnetlink`` import no project
package; the SGLB encodings and the software target sit on them; SyncMesh may
use the SGLB encodings but no switch target (it loads a target's pipeline
builder by name, ``switchtarget.pipeline.load_builder``); the Mininet testbed
is on top. No two modules import each other, directly or around a circle
(type-only imports left out: they never run). Benchmarks do not put
``tests/`` on ``sys.path``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED: dict[str, set[str]] = {
    "switchtarget": set(),
    "fabricmodel": set(),
    "rtnetlink": set(),
    "sglb": {"switchtarget"},
    "softswitch": {"switchtarget", "rtnetlink"},
    "bmv2": {"switchtarget", "softswitch"},   # the engine's match kinds and errors
    "syncmesh": {"switchtarget", "fabricmodel", "rtnetlink", "sglb"},
    "reccl": {"rtnetlink"},
    "fabricsim": {"fabricmodel", "sglb"},
    # the packet simulator runs the switch target and SyncMesh's core; `fabric-sim` is its entry
    "packetsim": {"switchtarget", "fabricmodel", "sglb", "softswitch", "syncmesh", "fabricsim"},
    "topologies": {"switchtarget", "fabricmodel", "rtnetlink", "sglb", "softswitch", "bmv2",
                   "syncmesh", "reccl"},
}
"""Package: the project packages it may import."""
SOURCE_DIRS = (ROOT, ROOT / "controller")


def _packages() -> dict[str, Path]:
    """Every top-level package of the project: {name: folder}."""
    return {init.parent.name: init.parent for base in SOURCE_DIRS
            for init in sorted(base.glob("*/__init__.py"))}


PACKAGES = _packages()


def _modules() -> dict[str, Path]:
    """Every module of the project's packages: {dotted name: file}."""
    out = {}
    for name, folder in PACKAGES.items():
        for f in sorted(folder.rglob("*.py")):
            parts = [name, *f.relative_to(folder).with_suffix("").parts]
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` is (or is in: a name imported from a module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``."""
    return {id(sub) for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for sub in ast.walk(node)}


def imports(module: str, path: Path, *, type_only: bool = True) -> set[str]:
    """The project modules a module imports, lazily or not (``type_only``: also those
    under ``if TYPE_CHECKING``); relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip = set() if type_only else _type_only(tree)
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            found |= {_resolve(f"{base}.{a.name}") for a in node.names}
    return {m for m in found if m and m != module}


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of the graph (its nodes, the first again at the end), or None."""
    state: dict[str, int] = {}      # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_every_package_has_a_place_in_the_order():
    assert set(PACKAGES) == set(ALLOWED), "add the package to ALLOWED (what it may import)"


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_import_only_what_sits_below_them(package):
    bad = {}
    for module, path in MODULES.items():
        if module.split(".")[0] != package:
            continue
        others = {m.split(".")[0] for m in imports(module, path)} - {package}
        if others - ALLOWED[package]:
            bad[str(path.relative_to(ROOT))] = sorted(others - ALLOWED[package])
    assert bad == {}


def test_the_order_has_no_circle():
    assert circle(ALLOWED) is None


def test_no_modules_import_each_other():
    graph = {m: imports(m, p, type_only=False) for m, p in MODULES.items()}
    assert circle(graph) is None


def test_benchmarks_do_not_reach_into_the_tests():
    """bench/ scripts share the tests' helpers through a project module, never by putting
    tests/ on sys.path."""
    bad = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                    "sys.path.insert", "sys.path.append") \
                    and "tests" in ast.unparse(node):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert bad == []


def test_the_checks_see_imports_and_circles():
    # the checkers themselves must be able to fail
    assert imports("syncmesh.cli", MODULES["syncmesh.cli"]) >= {"sglb.settings",
                                                               "switchtarget.pipeline"}
    assert "syncmesh.sglb_switch" in imports("syncmesh.sglb_tna_mapping",
                                             MODULES["syncmesh.sglb_tna_mapping"])
    assert any(m.startswith("syncmesh") for f in MODULES if f.startswith("topologies")
               for m in imports(f, MODULES[f]))
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b"}, "b": set()}) is None
