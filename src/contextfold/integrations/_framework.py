"""The framework an integration is built on: present, or an ``ImportError`` that names the extra installing it."""

from __future__ import annotations

import importlib.util

from ..errors import MissingDependency


def missing_framework(module: str, extra: str) -> MissingDependency:
    """The error for an integration whose framework (``module``) is not installed: it names ``extra``."""
    return MissingDependency(module, extra, f"contextfold.integrations needs it for the {extra} integration")


def require_framework(module: str, extra: str) -> None:
    """Raise :func:`missing_framework`'s error unless ``module`` can be imported (looked up, not imported: the
    integrations that import their framework lazily keep doing so)."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package is missing, or is not a package
        found = None
    if found is None:
        raise missing_framework(module, extra)
