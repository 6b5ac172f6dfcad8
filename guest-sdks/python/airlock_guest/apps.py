"""MCP Apps (``io.modelcontextprotocol/ui``): an HTML App, served as a
``ui://`` resource, that the client renders in a sandboxed frame for a
tool's results. The App may call tools back through its host.

This module writes the ``_meta.ui`` members for you::

    from airlock_guest import tool
    from airlock_guest.apps import AppCsp, AppUi, Visibility
    from airlock_guest.resources import Resources, app_resource

    APP = "ui://table/app.html"

    # The tool names its App; the App alone may call `refresh`.
    @tool("Shows the table.", app=APP)
    def show(call): ...

    @tool("Reloads the table.", app=APP, visibility=[Visibility.APP])
    def refresh(call): ...

    # The App's HTML, listed and read with the App MIME type and its settings.
    @app_resource(APP, ui=AppUi(csp=AppCsp(connect_domains=["https://api.example.com"]), prefers_border=True))
    def table(read):
        return "<!doctype html>..."
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Mapping, Sequence

from .content import check_meta

APP_MIME_TYPE = "text/html;profile=mcp-app"
"""The MIME type of an App's HTML."""


class Visibility(str, Enum):
    """Who may call a tool that has an App (``_meta.ui.visibility``); both
    when unset. Plain strings (``"model"``, ``"app"``) work too."""

    MODEL = "model"
    """The model (the tool is listed to it)."""
    APP = "app"
    """The App, through its host."""


@dataclass(frozen=True)
class AppCsp:
    """The Content Security Policy origins of an App (``_meta.ui.csp``);
    none unless given."""

    connect_domains: Sequence[str] = ()
    """Origins for ``fetch``, XHR and WebSocket."""
    resource_domains: Sequence[str] = ()
    """Origins for scripts, styles, images, fonts and media."""
    frame_domains: Sequence[str] = ()
    """Origins for nested frames."""
    base_uri_domains: Sequence[str] = ()
    """Origins allowed as the document's base URI."""

    def __post_init__(self) -> None:
        for field, origins in self._members():
            if isinstance(origins, str):
                raise TypeError(f"AppCsp.{field} is a list of origins, not one string")

    def _members(self) -> Iterable[tuple[str, Sequence[str]]]:
        yield "connect_domains", self.connect_domains
        yield "resource_domains", self.resource_domains
        yield "frame_domains", self.frame_domains
        yield "base_uri_domains", self.base_uri_domains

    def to_json(self) -> dict[str, Any]:
        """``{"connectDomains": [...], ...}``, the empty lists left out."""
        return {_camel(field): list(origins) for field, origins in self._members() if origins}


@dataclass(frozen=True)
class AppPermissions:
    """The browser permissions an App asks for (``_meta.ui.permissions``)."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def to_json(self) -> dict[str, Any]:
        """``{"camera": {}, ...}``: one empty object for each permission asked."""
        asked = {
            "camera": self.camera,
            "microphone": self.microphone,
            "geolocation": self.geolocation,
            "clipboard_write": self.clipboard_write,
        }
        return {_camel(name): {} for name, wanted in asked.items() if wanted}


@dataclass(frozen=True)
class AppUi:
    """How a client should present an App: its resource's ``_meta.ui``."""

    csp: AppCsp | None = None
    """The origins the App may reach; none unless set."""
    permissions: AppPermissions | None = None
    """The browser permissions the App asks for."""
    domain: str | None = None
    """A dedicated origin for the App, if the client supports one."""
    prefers_border: bool | None = None
    """Whether the App prefers the client to draw a border around it."""

    def to_json(self) -> dict[str, Any]:
        """The ``ui`` members, the unset ones left out."""
        members: dict[str, Any] = {}
        if self.csp is not None:
            members["csp"] = self.csp.to_json()
        if self.permissions is not None:
            members["permissions"] = self.permissions.to_json()
        if self.domain is not None:
            members["domain"] = self.domain
        if self.prefers_border is not None:
            members["prefersBorder"] = self.prefers_border
        return members


def with_ui(meta: Mapping[str, Any] | None, members: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``meta`` (an item's ``_meta``) with ``members`` set in its
    ``ui`` object, keeping what else it holds."""
    merged = dict(check_meta(meta) or {})
    ui = merged.get("ui")
    merged["ui"] = {**(ui if isinstance(ui, Mapping) else {}), **members}
    return merged


def app_meta(meta: Mapping[str, Any] | None, ui: AppUi | None) -> Mapping[str, Any] | None:
    """The ``_meta`` of an App's resource or contents: ``meta`` plus, when
    given, ``ui`` (how to present the App) as its ``ui`` members."""
    return meta if ui is None else with_ui(meta, ui.to_json())


def tool_meta(
    meta: Mapping[str, Any] | None, app: str | None, visibility: Iterable[Visibility | str] | None
) -> Mapping[str, Any] | None:
    """A tool's ``_meta``: ``meta`` plus, when given, the App that renders
    its results (``ui.resourceUri``) and who may call it (``ui.visibility``).
    Raises ``ValueError`` for a visibility that is neither model nor app."""
    members: dict[str, Any] = {}
    if app is not None:
        members["resourceUri"] = app
    if visibility is not None:
        if isinstance(visibility, str):
            raise TypeError("visibility is a list (e.g. [Visibility.APP]), not one string")
        members["visibility"] = [Visibility(who).value for who in visibility]
    return with_ui(meta, members) if members else meta


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.capitalize() for word in rest)
