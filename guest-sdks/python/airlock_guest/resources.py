"""Resources: ``@resource(uri, ...)`` declares a fixed one,
``@template(uri_template, ...)`` a family; :class:`Resources` is the export.

A component that offers resources imports the export into its app module:
``from airlock_guest.resources import Resources, resource``. A reader takes
the :class:`ResourceRead` and returns ``str`` (text) or ``bytes`` (a blob) of
the URI read, a list of :func:`contents` parts, ``None`` (not found), or an
:class:`~airlock_guest.asking.InputRequired`.
"""

from __future__ import annotations

from typing import Any, Callable

from wit_world.exports import resources as wit_resources
from wit_world.imports import types as wit

from .asking import InputRequired
from .content import resource_contents
from .inputs import Inputs

contents = resource_contents
"""``contents(uri, body, mime_type=None)``: one part of a read's result."""


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

_RESOURCES: dict[str, tuple[wit_resources.Resource, Reader]] = {}
_TEMPLATES: dict[str, tuple[wit_resources.ResourceTemplate, Reader]] = {}


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    size: int | None = None,
) -> Callable[[Reader], Reader]:
    """Declares the decorated function the reader of the resource ``uri``
    (named after the function unless ``name`` is given)."""

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
            meta=None,
        )
        _RESOURCES[uri] = (listing, reader)
        return reader

    return register


def template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Reader], Reader]:
    """Declares the decorated function the reader of every URI matching
    ``uri_template`` (RFC 6570 ``{var}`` and ``{+var}``)."""

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
            meta=None,
        )
        _TEMPLATES[uri_template] = (listing, reader)
        return reader

    return register


def read_outcome(read: ResourceRead, mime_type: str | None, outcome: Any) -> wit_resources.ReadOutcome:
    """What a reader returned, as the contract's ``read-outcome``."""
    if outcome is None:
        return wit_resources.ReadOutcome_NotFound()
    if isinstance(outcome, InputRequired):
        return wit_resources.ReadOutcome_InputRequired(outcome.to_wit())
    if isinstance(outcome, (str, bytes)):
        outcome = [resource_contents(read.uri, outcome, mime_type)]
    if isinstance(outcome, list):
        return wit_resources.ReadOutcome_Complete(outcome)
    raise TypeError(f"a resource reader returned {type(outcome).__name__}, which is not an outcome")


class Resources:
    """The component's ``resources`` export: the resources and templates
    declared with ``@resource`` and ``@template``."""

    def list_resources(self) -> list[wit_resources.Resource]:
        """Every declared resource."""
        return [listing for listing, _ in _RESOURCES.values()]

    def list_resource_templates(self) -> list[wit_resources.ResourceTemplate]:
        """Every declared template."""
        return [listing for listing, _ in _TEMPLATES.values()]

    def read_resource(
        self, uri: str, template: wit_resources.TemplateMatch | None, round: wit.Round
    ) -> wit_resources.ReadOutcome:
        """Reads one round of ``uri``."""
        read = ResourceRead(uri, template, round)
        registered = _TEMPLATES.get(read.template) if read.template else _RESOURCES.get(uri)
        if registered is None:
            return wit_resources.ReadOutcome_NotFound()
        listing, reader = registered
        return read_outcome(read, listing.mime_type, reader(read))
