"""Tool definitions: reading a format's function tools into ToolSpecs and writing them back."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..conversation import Conversation, JSONObject, JSONValue, Opaque, ToolSpec
from ._reading import WireObject, as_list, read_object
from ._writing import foreign_block, without_nones

EMPTY_SCHEMA: JSONObject = {"type": "object", "properties": {}}
"""The parameters schema sent for a tool defined without one in another format."""


def read_tools(
    tools: Sequence[object] | None, provider: str, read: Callable[[WireObject], ToolSpec | None]
) -> tuple[ToolSpec | Opaque, ...]:
    """Tool definitions: ``read`` makes a ToolSpec of a function tool (``None``: keep it Opaque)."""
    if tools is None:
        return ()
    specs: list[ToolSpec | Opaque] = []
    for position, raw in enumerate(as_list(tools, None, "tools")):
        wire = read_object(raw, None, f"tools[{position}]")
        spec = read(wire)
        specs.append(spec if spec is not None else Opaque(wire.data, provider))
    return tuple(specs)


def read_spec(wire: WireObject, schema_key: str, base: str = "") -> ToolSpec:
    """A ToolSpec from a function tool; ``base`` is where its fields sit (``"function"`` in chat)."""
    prefix = f"{base}." if base else ""
    name = wire.take(f"{prefix}name", str)
    description = wire.take(f"{prefix}description", str, required=False)
    parameters = wire.take(f"{prefix}{schema_key}", Mapping, required=False, nonempty=True)
    return ToolSpec(name, description, parameters or {}, wire.rest)


def spec_fields(spec: ToolSpec, schema_key: str, same: bool) -> dict[str, JSONValue]:
    """Name, description and schema of a tool; another format's tool without a schema gets an empty one."""
    schema = spec.parameters or (None if same else EMPTY_SCHEMA)
    return without_nones(name=spec.name, description=spec.description, **{schema_key: schema})


def write_tools(
    conversation: Conversation, provider: str, target: str, write: Callable[[ToolSpec, bool], dict[str, JSONValue]]
) -> list[dict[str, JSONValue]]:
    """Tool definitions for ``provider``; ``write(spec, same_format)`` renders one function tool."""
    same = conversation.header.meta.get("origin") == provider
    out: list[dict[str, JSONValue]] = []
    for position, spec in enumerate(conversation.header.tools):
        if isinstance(spec, Opaque):
            if spec.provider != provider:
                raise foreign_block(spec, None, f"header.tools[{position}]", target)
            out.append(dict(spec.data))
        else:
            out.append(write(spec, same))
    return out
