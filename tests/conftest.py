"""Shared pytest set-up: markers for the root-only layers; softswitch in strict mode."""

import os

import pytest

# An internal error of the softswitch engine (a bug in it or in the code it generates)
# raises instead of being counted as a drop, so that no test can pass on a crash
# ("no packet came out"). Subprocesses the tests start inherit it.
os.environ.setdefault("SOFTSWITCH_STRICT", "1")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces / Mininet)")
    for item in items:
        if "root" in item.keywords or "mininet" in item.keywords:
            item.add_marker(skip)
