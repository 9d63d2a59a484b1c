"""mini-swe-agent (and Live-SWE-agent) ``*.traj.json`` trajectories, tool-calling mode.

One JSON object ``{info, messages, trajectory_format, instance_id?}``; the
messages are OpenAI chat messages. Only ``role``, ``content``, ``tool_calls``
and ``reasoning_content`` make the items: ``extra.response`` (a raw copy of
the provider response) and ``extra.raw_output`` (a copy of the tool output)
duplicate what is already there. From ``extra`` the importer keeps the
timestamp, the response's ``usage`` and ``model`` (item meta) and the
returncode / exception of a tool result (the tool item's ``meta["facts"]``).

The final ``role: "exit"`` message is what the environment made of the last
command: the submit command (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``)
never gets a ``tool`` message, its output becomes the ``exit`` content (the
submission). So when the last call is still open, the exit message is that
call's result (``extra["exit_status"]``); otherwise it answers nothing the
model saw and only its ``exit_status`` is kept, in ``Header.meta``.
FormatError feedback (``role: "user"`` with ``extra.interrupt_type``) is an
ordinary user item with ``meta["interrupt_type"]``. A message of another role
(a newer version's bookkeeping) is skipped and counted in
``Header.meta["unknown_records"]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..adapters import adapter_for
from ..conversation import Conversation, JSONObject, JSONValue
from . import _openai_messages
from ._common import CHAT_ROLES, ConversationBuilder, Source, field_of, kind_of, object_at, unix_time

FORMAT = "mini-swe-agent"
OWN_KEYS = ("extra", "provider_specific_fields")
"""Message keys that are the recording's, not the chat's: mini-swe-agent's ``extra`` and litellm's bookkeeping."""


def matches(source: Source) -> bool:
    doc = source.document
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
        return False
    info = doc.get("info")
    return str(doc.get("trajectory_format", "")).startswith("mini-swe-agent") or (
        isinstance(info, dict) and "mini_version" in info
    )


def load(source: Source) -> list[Conversation]:
    doc = source.require_document(dict)
    messages = field_of(source, doc, "messages", list, "$")
    info = object_at(doc, "info")
    config = object_at(info, "config")
    model = object_at(config, "model")
    config_model = model.get("model_name")
    builder = ConversationBuilder(
        source,
        f"{source.name}:0",
        {
            "format": FORMAT,
            "instance_id": doc.get("instance_id"),
            "model": config_model,
            "exit_status": info.get("exit_status"),
            "mini_version": info.get("mini_version"),
        },
    )
    for index, message in enumerate(messages):
        where = f"$.messages[{index}]"
        if not isinstance(message, Mapping):
            raise source.error(where, "a message must be an object")
        extra = object_at(message, "extra")
        timestamp = unix_time(extra.get("timestamp"))
        role = kind_of(source, message, "role", where)
        if role == "exit":
            _add_exit(builder, message, extra, where, timestamp)
            continue
        if role is not None and role not in CHAT_ROLES:
            builder.skip_unknown(f"role {role}")
            continue
        meta: dict[str, JSONValue] = {}
        if message.get("role") == "assistant":
            meta = _response_meta(extra.get("response"))
        elif extra.get("interrupt_type"):
            meta = {"interrupt_type": extra["interrupt_type"]}
        facts = {k: extra[k] for k in ("returncode", "exception_info") if extra.get(k) not in (None, "")}
        _openai_messages.add_message(builder, message, where, timestamp, meta, facts, OWN_KEYS)
    return [builder.build()]


def _response_meta(response: object) -> dict[str, JSONValue]:
    """``usage`` and ``model`` of the raw litellm response kept in ``extra.response``."""
    if not isinstance(response, Mapping):
        return {}
    meta: dict[str, JSONValue] = {}
    if isinstance(response.get("usage"), Mapping):
        meta["usage"] = adapter_for("openai").read_usage(response["usage"]).to_dict()
    if isinstance(response.get("model"), str):
        meta["model"] = response["model"]
    if isinstance(response.get("id"), str):
        meta["response_id"] = response["id"]
    return meta


def _add_exit(
    builder: ConversationBuilder,
    message: JSONObject,
    extra: JSONObject,
    where: str,
    timestamp: float | None,
) -> None:
    status = extra.get("exit_status")
    open_calls = builder.open_calls()
    if open_calls:
        builder.add_result(
            open_calls[-1],
            _openai_messages.content_of(builder, message.get("content"), f"{where}.content"),
            where,
            timestamp=timestamp,
            facts={"exit_status": status} if status else {},
        )
    else:
        builder.skip("exit")
