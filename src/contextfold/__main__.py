"""``python -m contextfold``: the same as the ``contextfold`` command."""

from .cli import main

main()
