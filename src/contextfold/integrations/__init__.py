"""Drop-in context management for agent frameworks, one module per framework, each an optional extra.

``contextfold.integrations.openai_agents`` (``[openai-agents]``),
``.pydantic_ai`` (``[pydantic-ai]``), ``.strands`` (``[strands]``),
``.langchain`` (``[langchain]``) and ``.adk`` (``[adk]``); each imports its
framework only when used, so importing contextfold never needs one. Every
module converts the framework's history through :mod:`contextfold.adapters`.
:mod:`.mirror` is what the per-call ones share: a Context kept in step with a
history the framework owns; :mod:`._fold` is what the ones that persist a
summary in the framework's own history share (LangChain's ``persist`` mode, ADK).
"""
