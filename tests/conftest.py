"""Shared pytest set-up: markers for the root-only layers."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces / Mininet)")
    for item in items:
        if "root" in item.keywords or "mininet" in item.keywords:
            item.add_marker(skip)
