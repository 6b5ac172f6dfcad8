"""Results and the content blocks they carry.

A tool's handler finishes with a :class:`Result` (or simply returns a
``str``, which becomes a text result). ``Result`` is a small builder over the
contract's ``call-result`` record: text, images, audio, resource links and
embedded resources, structured content, and the ``is_error`` flag.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from wit_world.imports import types as wit


def text_block(text: str) -> wit.ContentBlock:
    """A plain text content block."""
    return wit.ContentBlock_Text(wit.TextContent(text=text, annotations=None))


def to_json(value: Any) -> str:
    """A JSON value as the compact text the contract's ``json`` type carries."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def check_meta(meta: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """``meta`` (an item's ``_meta``), once checked to be ``None`` or a
    mapping (a JSON object): raises ``TypeError`` for anything else, which
    the host would refuse."""
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(f"_meta must be a dict (a JSON object), not {type(meta).__name__}")
    return meta


def meta_json(meta: Mapping[str, Any] | None) -> str | None:
    """An item's ``_meta`` (a ``dict``) as the contract's ``json`` text, or
    ``None`` when there is none."""
    checked = check_meta(meta)
    return None if checked is None else to_json(dict(checked))


def resource_contents(
    uri: str, body: str | bytes, mime_type: str | None = None, meta: Mapping[str, Any] | None = None
) -> wit.ResourceContents:
    """The contents of one resource: text for ``str``, a blob for ``bytes``,
    with ``meta`` as its ``_meta``."""
    if isinstance(body, str):
        wire_body: wit.ResourceBody = wit.ResourceBody_Text(body)
    else:
        wire_body = wit.ResourceBody_Blob(bytes(body))
    return wit.ResourceContents(uri=uri, mime_type=mime_type, body=wire_body, meta=meta_json(meta))


class Result:
    """The complete result of a tool call, built up block by block.

    ``Result.text("done")``, ``Result.error("no such item")`` and
    ``Result.json({"total": 3})`` cover most tools; ``with_*`` methods add
    more blocks and return the same result, so calls chain.
    """

    def __init__(self) -> None:
        self.content: list[wit.ContentBlock] = []
        self.structured: str | None = None
        self.is_error = False

    @classmethod
    def text(cls, text: str) -> Result:
        """A result of one text block."""
        return cls().with_text(text)

    @classmethod
    def error(cls, message: str) -> Result:
        """A failed result the model can read and correct (``isError: true``)."""
        result = cls().with_text(message)
        result.is_error = True
        return result

    @classmethod
    def json(cls, value: Any) -> Result:
        """``value`` as structured content, and as JSON text for clients
        that only read text."""
        return cls().with_text(to_json(value)).with_structured(value)

    def with_text(self, text: str) -> Result:
        """Adds a text block."""
        self.content.append(text_block(text))
        return self

    def with_image(self, data: bytes, mime_type: str) -> Result:
        """Adds an image (raw bytes; the host base64-encodes them)."""
        media = wit.MediaContent(data=bytes(data), mime_type=mime_type, annotations=None)
        self.content.append(wit.ContentBlock_Image(media))
        return self

    def with_audio(self, data: bytes, mime_type: str) -> Result:
        """Adds an audio clip (raw bytes)."""
        media = wit.MediaContent(data=bytes(data), mime_type=mime_type, annotations=None)
        self.content.append(wit.ContentBlock_Audio(media))
        return self

    def with_resource_link(
        self,
        uri: str,
        name: str,
        *,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
    ) -> Result:
        """Adds a link to a resource the client may read."""
        link = wit.ResourceLink(
            uri=uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=None,
        )
        self.content.append(wit.ContentBlock_ResourceLink(link))
        return self

    def with_resource(
        self, uri: str, body: str | bytes, mime_type: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> Result:
        """Embeds a resource's contents (text for ``str``, a blob for ``bytes``;
        ``meta`` is their ``_meta``)."""
        embedded = wit.EmbeddedResource(contents=resource_contents(uri, body, mime_type, meta), annotations=None)
        self.content.append(wit.ContentBlock_EmbeddedResource(embedded))
        return self

    def with_structured(self, value: Any) -> Result:
        """Sets the machine-readable result (any JSON value)."""
        self.structured = to_json(value)
        return self

    def to_wit(self) -> wit.CallResult:
        """The contract's ``call-result``."""
        return wit.CallResult(content=list(self.content), structured_content=self.structured, is_error=self.is_error)
