"""Fixtures shared by the controller's manager tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def providers_file(tmp_path):
    """A providers file with one local provider (the manager tests' default)."""
    path = tmp_path / "providers.yaml"
    path.write_text("providers:\n  - {name: local, type: local}\n")
    return str(path)
