"""``python -m contextfold``: the same as the ``contextfold`` command.

``python -m`` puts the current folder first on the import path, and
``contextfold chat`` runs an agent that writes files in it: the folder is
taken off the path before the command imports anything more, so a module
the agent wrote there (``click.py``, ``json.py``) is never imported by the
command itself. (What the package imported on its way here came before;
``python -P -m contextfold``, or the ``contextfold`` command, leaves the
folder off from the start.)
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli import main  # noqa: E402 - only once the current folder is off the import path

main()
