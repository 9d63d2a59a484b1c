"""Opening a file inside the working folder so that no link, hard link or swap leads out of it.

Checking a resolved path and then opening it by name leaves a window: a
folder swapped for a link in between sends the open elsewhere. Here the
path (already resolved and checked inside the folder) is walked one
component at a time from a descriptor of the working folder, each folder
opened with ``O_NOFOLLOW`` relative to the last, and the file itself too: a
link that appeared since the check is refused, never followed. The file
must be a regular file (a FIFO or a device would block or never end) with
no second hard link: a hard link shares its contents with another name that
may be outside the folder or in the session's protected folder, so reading
it would leak that file and writing it would change it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class Refused(Exception):
    """The file cannot be opened safely; the message says why (the tools turn it into a ToolError)."""


def open_inside(root: Path, target: Path, flags: int, *, writing: bool = False, make_parents: bool = False) -> int:
    """A descriptor for ``target`` (a resolved path inside ``root``) opened with ``flags``, or :class:`Refused`.

    ``make_parents`` creates missing folders on the way (each one relative to
    the last); a file with more than one hard link is refused (``writing``
    only changes what the refusal says).
    """
    parts = target.relative_to(root).parts
    if not parts:
        raise Refused("the working folder itself is not a file")
    folder = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    for part in parts[:-1]:
        folder = _step(folder, part, make_parents)  # closes the folder it is given, whatever happens
    try:
        try:
            fd = os.open(parts[-1], flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, 0o666, dir_fd=folder)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise Refused(f"{target.name!r} became a symbolic link after it was checked; not followed") from None
            raise
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused("not a regular file (a FIFO, a device or a socket is never opened)")
        if info.st_nlink > 1:
            effect = "writing it would change" if writing else "reading it could show"
            raise Refused(f"the file has {info.st_nlink} hard links; {effect} a file that may be outside the working "
                          "folder or in the session's own folder")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _step(folder: int, part: str, make: bool) -> int:
    """Open the sub-folder ``part`` of ``folder`` without following a link; closes ``folder``."""
    try:
        try:
            return os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
        except FileNotFoundError:
            if not make:
                raise
            os.mkdir(part, 0o777, dir_fd=folder)
            return os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Refused(f"{part!r} is not a folder (or became a link after it was checked); not followed") from None
            raise
    finally:
        os.close(folder)
