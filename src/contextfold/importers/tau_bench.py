"""tau-bench ``historical_trajectories/*.json``: an array of results, one conversation each.

Each element is ``{task_id, trial, reward, info, traj}``; ``traj`` is the
OpenAI chat between the tool-calling agent and the simulated customer (the
``user`` messages). The file has no timestamps, usage or tool definitions.
``task_id``, ``trial`` and ``reward`` go to ``Header.meta``; the task
specification in ``info`` (the expected actions) is grading data, not part
of the conversation, and is left out.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..conversation import Conversation
from . import _openai_messages
from ._common import ConversationBuilder, Source, field_of

FORMAT = "tau-bench"


def matches(source: Source) -> bool:
    """An array of results, the first with a ``traj`` list (``task_id`` and the rest may be missing)."""
    doc = source.document
    return bool(doc) and isinstance(doc, list) and isinstance(doc[0], dict) and isinstance(doc[0].get("traj"), list)


def load(source: Source) -> list[Conversation]:
    conversations = []
    for index, result in enumerate(source.require_document(list)):
        where = f"$[{index}]"
        if not isinstance(result, Mapping):
            raise source.error(where, "a result must be an object")
        messages = field_of(source, result, "traj", list, where)
        meta = {
            "format": FORMAT,
            "task_id": result.get("task_id"),
            "trial": result.get("trial"),
            "reward": result.get("reward"),
        }
        builder = ConversationBuilder(source, f"{source.name}:{index}", meta)
        for position, message in enumerate(messages):
            _openai_messages.add_message(builder, message, f"{where}.traj[{position}]")
        conversations.append(builder.build())
    return conversations
