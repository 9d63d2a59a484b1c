"""A reference coding agent on contextfold (``contextfold chat``).

:mod:`.loop` is the whole agent loop and the place to start reading;
:mod:`.tools` the tools, confined to the working folder; :mod:`.models` the
provider clients; :mod:`.commands` the slash commands of the interactive
session. The ``chat`` command itself is in :mod:`contextfold.cli.chat`.
"""
