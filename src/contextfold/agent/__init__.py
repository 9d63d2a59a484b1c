"""A reference coding agent on contextfold (``contextfold chat``).

:mod:`.loop` is the whole agent loop and the place to start reading;
:mod:`.tools` the tools, confined to the working folder; :mod:`.models` the
provider clients; :mod:`.commands` the slash commands; :mod:`.command` the
command line.
"""
