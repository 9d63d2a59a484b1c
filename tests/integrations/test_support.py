"""A missing framework skips a test locally and fails it under CI=true (CI installs every integration extra)."""

from __future__ import annotations

import pytest
from support import require


def test_missing_framework_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"pip install 'contextfold\[x\]'"):
        require("no_such_framework_module", "x")


def test_missing_framework_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require("no_such_framework_module", "x")
