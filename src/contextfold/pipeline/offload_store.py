"""Where an offloaded tool output is kept and read back: a blob of the session's store, or a file.

:mod:`.stages.persist` offloads an output too large to send whole (on
arrival, or as the ``persist`` stage): it keeps the output in the session's
:class:`Blobs` (its store's, named by content) or, with a results folder, as
a file (:func:`save_output`), and the item keeps only a preview.
:func:`saved_output` reads it back, for the history tools
(:mod:`contextfold.lookback.offloaded`) and the integrations alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from ..conversation import Item
from ..private_files import open_dir, open_file, safe_name, write_new


def save_output(results_dir: str | os.PathLike[str], item_id: str, text: str) -> Path:
    """Write ``text`` as the saved output of ``item_id`` in ``results_dir``; returns its path.

    Raises :class:`OSError` (a full disk) or :class:`~contextfold.errors.UnsafePath`
    (the folder is a link, or others may write to it); nothing is left behind either way.
    """
    folder = Path(results_dir)
    dir_fd = open_dir(folder)
    try:
        return write_new(dir_fd, safe_name(item_id, ".txt"), text.encode("utf-8", "surrogatepass"), where=folder)
    finally:
        os.close(dir_fd)


class Blobs(Protocol):
    """Where a session keeps offloaded outputs by content (a stored session: its store's blobs, see
    :class:`~contextfold.stores.base.BlobStore`), so any worker that resumes the session can read them."""

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, digest: str) -> bytes: ...

    def blob_path(self, digest: str) -> Path | None: ...


def saved_output(item: Item, blobs: Blobs | None = None) -> str | None:
    """The whole output of an item :func:`offload` saved, read back: from the session's ``blobs`` when it was
    kept there (:attr:`~contextfold.conversation.Offloaded.blob`), else from its file
    (:attr:`~contextfold.conversation.Offloaded.saved_to`); ``None`` if it was not saved. A blob that is gone (its
    session pruned) is :class:`~contextfold.errors.BlobNotFound`."""
    where = item.provenance.offloaded
    if where is None:
        return None
    if where.blob is not None and blobs is not None:
        return blobs.get_blob(where.blob).decode("utf-8", "surrogatepass")
    if where.saved_to is None:
        return None
    path = Path(where.saved_to)
    folder = open_dir(path.parent, create=False)
    try:
        fd = open_file(folder, path.name, os.O_RDONLY, where=path.parent)
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as file:
        return file.read().decode("utf-8", "surrogatepass")
