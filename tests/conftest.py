"""Shared pytest set-up: markers for the root-only layers and for the reference tools
(p4c, BMv2); the P4 target of the packet tests (``--target``, tests/p4target.py);
softswitch in strict mode, with the engine ``--engine`` selects."""

import os

import p4target
import pytest

from bmv2 import tools

# marker -> the tools its tests need
_TOOL_MARKERS = {"p4c": (tools.P4C,), "bmv2": (tools.P4C, tools.SWITCH)}
_skipped_key = pytest.StashKey[int]()

# An internal error of the softswitch engine (a bug in it or in the code it generates)
# raises instead of being counted as a drop, so that no test can pass on a crash
# ("no packet came out"). Subprocesses the tests start inherit it.
os.environ.setdefault("SOFTSWITCH_STRICT", "1")


def pytest_addoption(parser):
    parser.addoption("--target", choices=p4target.TARGETS,
                     default=os.environ.get("P4_TARGET", p4target.SOFTSWITCH).lower(),
                     help="P4 target of the SGLB packet tests and the STF corpus "
                          "(default softswitch, or $P4_TARGET)")
    parser.addoption("--engine", choices=("python", "native"),
                     default=os.environ.get("SOFTSWITCH_ENGINE") or "python",
                     help="softswitch's packet engine for every Switch the tests make "
                          "(default python, or $SOFTSWITCH_ENGINE; subprocesses inherit it)")


def pytest_configure(config):
    target = config.getoption("--target")
    if target == p4target.BMV2:
        try:
            tools.require(tools.P4C, tools.SWITCH, purpose="--target bmv2")
        except tools.MissingToolError as e:
            raise pytest.UsageError(str(e)) from None
    p4target.select(target)
    os.environ["SOFTSWITCH_ENGINE"] = config.getoption("--engine")


def pytest_report_header(config):
    found = ", ".join(f"{t.name} {'found' if tools.find(t) else 'missing'}"
                      for t in (tools.P4C, tools.SWITCH))
    return (f"P4 target of the packet tests: {p4target.selected()} (softswitch engine "
            f"{os.environ.get('SOFTSWITCH_ENGINE', 'python')}); reference tools: {found}")



def pytest_collection_modifyitems(config, items):
    skipped = 0
    for marker, needed in _TOOL_MARKERS.items():
        missing = tools.missing_names(*needed)
        if not missing:
            continue
        skip = pytest.mark.skip(reason=f"needs {' and '.join(missing)} (not installed: "
                                       "docs/bmv2.md)")
        for item in items:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)
                skipped += 1
    config.stash[_skipped_key] = skipped
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces / Mininet)")
    for item in items:
        if "root" in item.keywords or "mininet" in item.keywords:
            item.add_marker(skip)



def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = config.stash.get(_skipped_key, 0)
    missing = tools.missing_names(tools.P4C, tools.SWITCH)
    if skipped and missing:
        terminalreporter.write_line(
            f"reference tools: {', '.join(missing)} not installed: {skipped} test(s) that "
            "compare with p4c/BMv2 skipped (docs/bmv2.md)", yellow=True)


@pytest.fixture(autouse=True)
def _stop_bmv2_switches():
    """Every BMv2 a test started is stopped when it ends, pass or fail."""
    yield
    p4target.close_all()
