"""One error tree: the storage errors under one parent, each with one, and every public error importable from
``contextfold`` and ``contextfold.errors`` alike."""

from __future__ import annotations

import inspect

import contextfold
from contextfold import errors
from contextfold.errors import ContextfoldError, StorageError, StoreError, TranscriptError


def public_errors() -> dict[str, type]:
    return {name: value for name, value in vars(errors).items()
            if inspect.isclass(value) and issubclass(value, (Exception, Warning))
            and value.__module__ == errors.__name__ and not name.startswith("_")}


def test_a_store_and_a_transcript_fail_under_one_storage_error_neither_under_the_other() -> None:
    assert StorageError.__bases__ == (ContextfoldError,)
    assert StoreError.__bases__ == (StorageError,) and TranscriptError.__bases__ == (StorageError,)
    assert not issubclass(StoreError, TranscriptError) and not issubclass(TranscriptError, StoreError)


def test_every_public_error_is_exported_from_the_package_and_its_errors_module() -> None:
    found = public_errors()
    assert "ContextOverflow" in found and "StorageError" in found
    assert sorted(errors.__all__) == sorted(found)
    for name, error in found.items():
        assert name in contextfold.__all__, f"contextfold does not export {name}"
        assert getattr(contextfold, name) is error


def test_every_error_has_one_parent_in_the_tree() -> None:
    """Single inheritance: each error of contextfold's tree has exactly one contextfold parent (a builtin beside it,
    ``ValueError`` for a bad value, says which family Python's own callers catch it as)."""
    ours = {value for value in vars(errors).values() if inspect.isclass(value) and value.__module__ == errors.__name__
            and issubclass(value, ContextfoldError) and value is not ContextfoldError}
    assert {error.__name__: [base.__name__ for base in error.__bases__ if base.__module__ == errors.__name__]
            for error in ours if len([b for b in error.__bases__ if b.__module__ == errors.__name__]) != 1} == {}
    assert errors.TranscriptCorrupt.__bases__ == (TranscriptError,) and errors.TranscriptUnsafe.__bases__ == (
        TranscriptError,)
