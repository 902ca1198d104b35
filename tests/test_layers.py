"""The package layering of README's layout table, checked on the source.

From the bottom: ``fabricmodel``, ``rtnetlink`` and ``softswitch.port_status``
import no project package; ``sglb.config`` imports only ``sglb.codes``; the
daemons, the library and the simulator never import the Mininet testbed
(``topologies``), which sits on top and may import all of them.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"bmv2", "fabricmodel", "rtnetlink", "sglb", "softswitch", "syncmesh", "reccl", "fabricsim",
           "topologies"}
BELOW_TESTBED = ["bmv2", "fabricmodel", "rtnetlink", "sglb", "softswitch", "controller/syncmesh",
                 "reccl", "fabricsim"]


def _imports(path: Path) -> set[str]:
    """Top-level project packages (or ``pkg.module``) that a file imports, lazily or not."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found |= {n for n in names if n.split(".")[0] in PROJECT}
    return found


def _files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", BELOW_TESTBED)
def test_nothing_below_the_testbed_imports_it(folder):
    bad = {str(f.relative_to(ROOT)): sorted(i for i in _imports(f) if i.startswith("topologies"))
           for f in _files(folder)}
    assert {f: i for f, i in bad.items() if i} == {}


@pytest.mark.parametrize("folder", ["fabricmodel", "rtnetlink"])
def test_bottom_packages_import_no_project_package(folder):
    bad = {str(f.relative_to(ROOT)): sorted(i for i in _imports(f) if not i.startswith(folder))
           for f in _files(folder)}
    assert {f: i for f, i in bad.items() if i} == {}


def test_shared_encodings_stay_at_the_bottom():
    assert _imports(ROOT / "softswitch" / "port_status.py") == set()
    assert {i.split(".")[0] + "." + i.split(".")[1] for i in
            _imports(ROOT / "sglb" / "config.py")} == {"sglb.codes"}


def test_the_check_sees_imports():
    # the checker itself must be able to fail: it finds the testbed's own imports
    assert any(i.startswith("syncmesh") for f in _files("topologies") for i in _imports(f))
    assert any(i.startswith("fabricmodel") for f in _files("controller/syncmesh")
               for i in _imports(f))
