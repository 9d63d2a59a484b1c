"""Owner-only files in owner-only folders, opened without ever following a link.

Everything a session writes (its transcript, persisted outputs) goes through
here, because each of those paths can be reached from untrusted input (an
item id in a crafted session file, a folder someone else can write to):

* a folder is opened once with ``O_NOFOLLOW | O_DIRECTORY`` and every file in
  it is opened relative to that descriptor, so swapping the folder for a
  link after the check changes nothing;
* a file is opened with ``O_NOFOLLOW`` (and ``O_EXCL`` when it is new): a link
  planted at its name is refused, never followed;
* a folder or file writable by others is tightened when it is ours (with a
  logged warning) and refused when it is not; a file with a second hard link
  is refused, since writing it would change the other name too;
* a new file is written under a temporary name and renamed into place, so a
  failed write (a full disk) leaves nothing behind, and a reader never sees
  half of it: the files a user names (``--output``) are written so too
  (:func:`replace_file`).

Refusals are :class:`~contextfold.errors.UnsafePath` (or the ``unsafe`` error
the caller passes, made from the path and the reason, e.g.
:class:`~contextfold.errors.TranscriptUnsafe`: a :data:`Refusal`).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import UnsafePath

log = logging.getLogger(__name__)

Refusal = Callable[[str, str], Exception]
"""The error a refused path raises, made from the path and the reason (:class:`UnsafePath` by default)."""

FILE_MODE = 0o600
DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at a file name must not block the open
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def safe_name(identifier: str, suffix: str) -> str:
    """A file name for ``identifier``: itself when it is short and plain, else a hash of it.

    Plain means 1-100 letters, digits, ``.``, ``_``, ``-``, starting with a
    letter or digit. Any other id (a path, a NUL, 10,000 characters) is named
    ``<plain prefix>~<sha256>``: ``~`` never occurs in a plain name, so the two
    kinds cannot collide, and the same id always gets the same name.
    """
    if _SAFE_NAME.fullmatch(identifier):
        return identifier + suffix
    digest = hashlib.sha256(identifier.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "_", identifier)[:40].strip("_-")
    return f"{prefix}~{digest}{suffix}"


def open_dir(path: str | os.PathLike[str], *, create: bool = True, unsafe: Refusal = UnsafePath) -> int:
    """A descriptor of the folder ``path`` (created 0700 if missing), checked to be safe to write in."""
    path = Path(path)
    _refuse_nul(path, unsafe)
    if create:
        try:
            path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except FileExistsError:  # a dangling link or a file at the name: the open below says which
            pass
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR) and path.is_symlink():
            raise unsafe(str(path), "the folder is a symbolic link; refusing to follow it") from err
        raise
    try:
        _tighten(fd, path, DIR_MODE, unsafe, "folder")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(dir_fd: int, name: str, flags: int, *, where: Path, unsafe: Refusal = UnsafePath) -> int:
    """Open ``name`` in the folder ``dir_fd`` with ``flags``, never following a link, and check it.

    ``flags`` may include ``O_CREAT | O_EXCL``; the file is created 0600. An
    existing file must be a regular file of ours with one link; a loose mode
    is tightened.
    """
    path = where / name
    _refuse_nul(path, unsafe)
    try:
        fd = os.open(name, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, FILE_MODE, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ELOOP or (err.errno == errno.EEXIST and _is_link(dir_fd, name)):
            raise unsafe(str(path), "the file is a symbolic link; refusing to follow it") from err
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise unsafe(str(path), "not a regular file")
        if info.st_nlink > 1:
            raise unsafe(str(path), f"the file has {info.st_nlink} hard links; writing it would change the others")
        _tighten(fd, path, FILE_MODE, unsafe, "file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_new(dir_fd: int, name: str, data: bytes, *, where: Path, durable: bool = False) -> Path:
    """Write ``data`` as ``name`` in the folder ``dir_fd``, all or nothing; returns the path.

    The bytes go to a fresh temporary file (``O_EXCL``, 0600) that is renamed
    over ``name`` once complete (:func:`replacing`): a link planted at ``name``
    is replaced, not followed, and on any error (a full disk) the temporary
    file is removed. ``durable``: the file and the rename are flushed to disk
    before this returns (for what a record written after it will name).
    """
    with replacing(dir_fd, name, where=where, durable=durable) as file:
        view = memoryview(data)
        while view:
            written = os.write(file.fileno(), view)
            if written == 0:
                raise OSError(errno.ENOSPC, "the file accepted no bytes")
            view = view[written:]
    return where / name


@contextmanager
def replacing(dir_fd: int, name: str, *, where: Path, durable: bool = True) -> Iterator[BinaryIO]:
    """A file to write the new contents of ``name`` (in the folder ``dir_fd``) into, renamed over it when the
    block ends without an error.

    The file is a fresh temporary one beside ``name`` (``O_EXCL``, 0600), so
    whoever reads ``name`` sees the old contents or the new, never a part; a
    link at ``name`` is replaced, never followed. When the block raises, the
    temporary file is removed and ``name`` is left as it was. ``durable``: the
    file and the rename are flushed to disk before the block's end returns.
    """
    temporary = f".{name[:60]}.{secrets.token_hex(6)}.tmp"
    fd = open_file(dir_fd, temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, where=where)
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            if durable:
                os.fsync(fd)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        if durable:
            os.fsync(dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError as err:
            log.warning("could not remove the partial file %s: %s", where / temporary, err)
        raise


@contextmanager
def replace_file(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """:func:`replacing` for a file the user named (``--output``): owner-only (0600) whatever the umask or the
    mode of the file it replaces, renamed into place atomically, flushed to disk, a link at ``path`` replaced
    rather than followed. Its folder must exist and is used as it is (its mode is the user's)."""
    path = Path(path)
    _refuse_nul(path, UnsafePath)
    dir_fd = os.open(path.parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        with replacing(dir_fd, path.name, where=path.parent) as file:
            yield file
    finally:
        os.close(dir_fd)


def _refuse_nul(path: Path, unsafe: Refusal) -> None:
    """No system call takes a path holding a NUL byte (Python raises ValueError at the first): refuse it typed."""
    if "\0" in str(path):
        raise unsafe(str(path).replace("\0", "\\0"), "a path cannot hold a NUL byte")


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _tighten(fd: int, path: Path, mode: int, unsafe: Refusal, what: str) -> None:
    """Refuse a file or folder of someone else that others may write; make ours owner-only."""
    info = os.fstat(fd)
    loose = stat.S_IMODE(info.st_mode) & 0o077
    if not loose:
        return
    mine = info.st_uid == os.geteuid() if hasattr(os, "geteuid") else True
    writable_by_others = bool(loose & 0o022)
    if not mine:
        if writable_by_others:
            raise unsafe(str(path), f"the {what} belongs to another user and others may write to it "
                                    f"(mode {stat.S_IMODE(info.st_mode):o})")
        return
    if what == "folder" and not writable_by_others:
        return  # a folder of ours others may list but not change: keep the owner's choice
    if what == "folder" and info.st_mode & stat.S_ISVTX:  # /tmp as root: made owner-only, every other user breaks
        raise unsafe(str(path), f"the folder is shared by all (mode {stat.S_IMODE(info.st_mode):o}) and others may "
                                "write to it; use a folder of its own")
    try:
        os.fchmod(fd, mode)
    except OSError as err:
        raise unsafe(str(path), f"the {what} has mode {stat.S_IMODE(info.st_mode):o} and cannot be made "
                                f"owner-only: {err}") from err
    log.warning("%s: the %s had mode %o; made it owner-only (%o)", path, what, stat.S_IMODE(info.st_mode), mode)
