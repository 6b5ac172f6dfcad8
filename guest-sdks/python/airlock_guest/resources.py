"""Resources: ``@resource(uri, ...)`` declares a fixed one,
``@template(uri_template, ...)`` a family; :class:`Resources` is the export.

A component that offers resources imports the export into its app module:
``from airlock_guest.resources import Resources, resource``. A reader takes
the :class:`ResourceRead` and returns ``str`` (text) or ``bytes`` (a blob) of
the URI read, a list of :func:`contents` parts, ``None`` (not found), or an
:class:`~airlock_guest.asking.InputRequired`.

An MCP App's HTML is a resource declared with :func:`app_resource` (see
:mod:`airlock_guest.apps`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from wit_world.exports import resources as wit_resources
from wit_world.imports import types as wit

from .apps import APP_MIME_TYPE, AppUi, app_meta
from .asking import InputRequired
from .content import check_meta, meta_json, resource_contents
from .inputs import Inputs

contents = resource_contents
"""``contents(uri, body, mime_type=None, meta=None)``: one part of a read's
result (``meta`` is its ``_meta``)."""


class ResourceRead(Inputs):
    """One round of a ``resources/read``: the URI, and for a template the
    variables the URI gave."""

    def __init__(self, uri: str, template: wit_resources.TemplateMatch | None, round: wit.Round) -> None:
        super().__init__(round)
        self.uri = uri
        self.template = template.uri_template if template else None
        self.variables: dict[str, str] = dict(template.variables) if template else {}

    def variable(self, name: str) -> str | None:
        """The (percent-decoded) value of template variable ``name``."""
        return self.variables.get(name)


Reader = Callable[[ResourceRead], Any]


@dataclass(frozen=True)
class Registered:
    """A resource or template as listed, its reader, and the ``_meta`` of
    the contents made of a ``str`` or ``bytes`` it returns."""

    listing: wit_resources.Resource | wit_resources.ResourceTemplate
    reader: Reader
    read_meta: Mapping[str, Any] | None = None


_RESOURCES: dict[str, Registered] = {}
_TEMPLATES: dict[str, Registered] = {}


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
    meta: Mapping[str, Any] | None = None,
    read_meta: Mapping[str, Any] | None = None,
) -> Callable[[Reader], Reader]:
    """Declares the decorated function the reader of the resource ``uri``
    (named after the function unless ``name`` is given), listed with
    ``meta`` as its ``_meta``; what the reader returns as ``str`` or
    ``bytes`` is read with ``mime_type`` and ``read_meta``."""

    def register(reader: Reader) -> Reader:
        if uri in _RESOURCES:
            raise ValueError(f"resource `{uri}` is declared twice")
        listing = wit_resources.Resource(
            uri=uri,
            name=name or reader.__name__,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=None,
            meta=meta_json(meta),
        )
        _RESOURCES[uri] = Registered(listing, reader, check_meta(read_meta))
        return reader

    return register


def app_resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    ui: AppUi | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[Reader], Reader]:
    """Declares the decorated function the reader of an MCP App's HTML at
    ``uri`` (a ``ui://`` URI): listed, and read when it returns a ``str``,
    with the App MIME type and ``ui`` (how to present the App) as
    ``_meta.ui``, beside what ``meta`` holds."""
    listed = app_meta(meta, ui)
    return resource(
        uri, name=name, title=title, description=description, mime_type=APP_MIME_TYPE, meta=listed, read_meta=listed
    )


def app_contents(
    uri: str, html: str, ui: AppUi | None = None, meta: Mapping[str, Any] | None = None
) -> wit.ResourceContents:
    """An App's HTML at ``uri`` as one part of a read's result: the App MIME
    type, and ``ui`` as ``_meta.ui`` (clients prefer it to the listed one)."""
    return resource_contents(uri, html, APP_MIME_TYPE, app_meta(meta, ui))


def template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[Reader], Reader]:
    """Declares the decorated function the reader of every URI matching
    ``uri_template`` (RFC 6570 ``{var}`` and ``{+var}``), listed with
    ``meta`` as its ``_meta``."""

    def register(reader: Reader) -> Reader:
        if uri_template in _TEMPLATES:
            raise ValueError(f"resource template `{uri_template}` is declared twice")
        listing = wit_resources.ResourceTemplate(
            uri_template=uri_template,
            name=name or reader.__name__,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=None,
            meta=meta_json(meta),
        )
        _TEMPLATES[uri_template] = Registered(listing, reader)
        return reader

    return register


def read_outcome(read: ResourceRead, registered: Registered, outcome: Any) -> wit_resources.ReadOutcome:
    """What the reader of ``registered`` returned, as the contract's
    ``read-outcome``."""
    if outcome is None:
        return wit_resources.ReadOutcome_NotFound()
    if isinstance(outcome, InputRequired):
        return wit_resources.ReadOutcome_InputRequired(outcome.to_wit())
    if isinstance(outcome, (str, bytes)):
        outcome = [resource_contents(read.uri, outcome, registered.listing.mime_type, registered.read_meta)]
    if isinstance(outcome, list):
        return wit_resources.ReadOutcome_Complete(outcome)
    raise TypeError(f"a resource reader returned {type(outcome).__name__}, which is not an outcome")


class Resources:
    """The component's ``resources`` export: the resources and templates
    declared with ``@resource`` and ``@template``."""

    def list_resources(self) -> list[wit_resources.Resource]:
        """Every declared resource."""
        return [registered.listing for registered in _RESOURCES.values()]

    def list_resource_templates(self) -> list[wit_resources.ResourceTemplate]:
        """Every declared template."""
        return [registered.listing for registered in _TEMPLATES.values()]

    def read_resource(
        self, uri: str, template: wit_resources.TemplateMatch | None, round: wit.Round
    ) -> wit_resources.ReadOutcome:
        """Reads one round of ``uri``."""
        read = ResourceRead(uri, template, round)
        registered = _TEMPLATES.get(read.template) if read.template else _RESOURCES.get(uri)
        if registered is None:
            return wit_resources.ReadOutcome_NotFound()
        return read_outcome(read, registered, registered.reader(read))
