"""What an image or a PDF costs depends on its size, read from the bytes we already hold.

Only headers are parsed: the pixel size of a PNG, GIF, WebP or JPEG (from at
most 64 KiB of it), the page count of a PDF. Nothing is decoded or fetched;
an unreadable header gives ``None`` and the estimator assumes a full-size
image.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

from ..conversation import Image, JSONObject

_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_DATA_URL = re.compile(r"^data:[^;,]*;base64,", re.IGNORECASE)
_IMAGE_HEADER_B64_CHARS = 87_384  # 64 KiB of image: enough to reach a JPEG's frame header past EXIF


def b64decode(data: str) -> bytes:
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return b""


def image_size(block: Image) -> tuple[int, int] | None:
    """Width and height in pixels: as declared beside the image, else from its header; ``None`` if unknown."""
    return _declared_size(block.extra) or _header_size(_image_bytes(block))


def pdf_pages(data: bytes) -> int:
    """How many pages a PDF declares (0 when they are in compressed object streams and cannot be seen)."""
    return len(_PDF_PAGE.findall(data))


def _declared_size(extra: JSONObject) -> tuple[int, int] | None:
    width, height = extra.get("width"), extra.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        return width, height
    return None


def _image_bytes(block: Image) -> bytes:
    data = block.data
    if data is None and block.url and _DATA_URL.match(block.url):
        data = _DATA_URL.sub("", block.url, count=1)
    if not data:
        return b""
    head = data[:_IMAGE_HEADER_B64_CHARS]
    return b64decode(head[: len(head) - len(head) % 4])


def _header_size(data: bytes) -> tuple[int, int] | None:
    """Width and height in pixels from a PNG, GIF, WebP or JPEG header; ``None`` if unreadable."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 < len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # start of frame
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return width, height
        position += 2 + length
    return None
