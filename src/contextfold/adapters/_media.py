"""Images and documents across formats: data URLs, OpenAI file references, Anthropic document sources."""

from __future__ import annotations

import base64
import binascii

from ..conversation import Document, Image, JSONValue
from ..errors import InvalidContent
from ._reading import where


def data_url(media_type: str | None, data: str) -> str:
    return f"data:{media_type or 'application/octet-stream'};base64,{data}"


def split_data_url(url: str) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a base64 ``data:`` URL, else ``None``."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")] or "application/octet-stream", data


def image_url(image: Image) -> str | None:
    """The URL OpenAI formats take for an image: its own, or a ``data:`` URL of its base64 data."""
    if image.url is not None:
        return image.url
    return data_url(image.media_type, image.data) if image.data is not None else None


OPENAI_FILE_KEYS = ("file_data", "file_id", "file_url", "filename")
"""Keys of an OpenAI file reference (chat ``file`` parts; Responses ``input_file``)."""


def is_anthropic_source(document: Document) -> bool:
    """Anthropic document sources carry a ``type``; OpenAI file references do not."""
    return "type" in document.source


def openai_file(document: Document, index: int | None, field: str, target: str, accepts_url: bool) -> dict[str, JSONValue]:
    """An OpenAI file reference for a document read from another format (``accepts_url``: Responses only)."""
    source = document.source
    if not is_anthropic_source(document):
        if "file_url" in source and not accepts_url:
            raise InvalidContent(index, where(field, "source.file_url"), f"{target} cannot reference a file by URL")
        return {k: source[k] for k in OPENAI_FILE_KEYS if k in source}
    name = document.extra.get("title") or "document"
    if source.get("type") == "base64":
        return {"file_data": data_url(source.get("media_type"), source.get("data", "")), "filename": name}
    if source.get("type") == "text":
        encoded = base64.b64encode(str(source.get("data", "")).encode("utf-8")).decode("ascii")
        return {"file_data": data_url("text/plain", encoded), "filename": name}
    if source.get("type") == "url" and accepts_url:
        return {"file_url": source.get("url")}
    kind = source.get("type")
    raise InvalidContent(index, field, f"an Anthropic {kind!r} document source cannot be expressed in {target}")


def anthropic_source(document: Document, index: int | None, field: str) -> dict[str, JSONValue]:
    """An Anthropic document source for an OpenAI file reference."""
    source = document.source
    inline = split_data_url(source["file_data"]) if isinstance(source.get("file_data"), str) else None
    if inline is not None:
        media_type, data = inline
        if media_type == "text/plain":
            try:
                text = base64.b64decode(data, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise InvalidContent(index, field, "text/plain file data is not base64 UTF-8") from None
            return {"type": "text", "media_type": media_type, "data": text}
        return {"type": "base64", "media_type": media_type, "data": data}
    if isinstance(source.get("file_url"), str):
        return {"type": "url", "url": source["file_url"]}
    raise InvalidContent(index, field, "an OpenAI file id or non-base64 file cannot be expressed in Anthropic")
