"""Drop-in context management for agent frameworks, one module per framework, each an optional extra.

``contextfold.integrations.openai_agents`` (``[openai-agents]``),
``.pydantic_ai`` (``[pydantic-ai]``) and ``.strands`` (``[strands]``); each
imports its framework only when used, so importing contextfold never needs
one. :mod:`.mirror` is what they share: a Context kept in step with a
history the framework owns.
"""
