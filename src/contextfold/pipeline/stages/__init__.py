"""The stages: one module each, a pure function ``(Conversation, Budget) -> (Conversation, list[Event])``.

The rest of :mod:`contextfold.pipeline` is the machinery that runs them (the
step, the economics, escalation, the invariant check) and the helpers they share.
"""
