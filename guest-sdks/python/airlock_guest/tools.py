"""Declaring tools and running their calls.

``@tool(...)`` registers a handler; the :class:`Tools` class is what the
component exports (componentize-py looks it up in the app module, so the
app imports it: ``from airlock_guest import Tools``).

A handler takes the :class:`Call` and returns one of:

* a ``str`` (a text result) or a :class:`~airlock_guest.content.Result`;
* a ``dict`` or ``list`` (structured content, also given as JSON text);
* an :class:`~airlock_guest.asking.InputRequired` (ask the client first);
* :class:`ContinueAsTask` (go on as a task) or :class:`Failed` (end the
  call with a JSON-RPC error).

Raising :class:`ToolError` ends the call with a result the model reads
(``isError: true``). Any other exception is a bug: the call traps, and the
host reports it to the client and logs the traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, TypeVar

from wit_world.imports import types as wit

from .apps import Visibility, tool_meta
from .asking import InputRequired
from .content import Result, meta_json, to_json
from .inputs import Inputs, from_mapping

T = TypeVar("T")

TaskSupport = wit.TaskSupport
"""Whether a tool's calls may run as tasks: ``NEVER``, ``OPTIONAL``, ``REQUIRED``."""


class ToolError(Exception):
    """Ends the call with an error result the model can read and correct."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ContinueAsTask:
    """Runs the rest of the call as a task, from a next round that starts
    with ``state`` (any JSON value). Only when ``call.client.can_use_tasks``
    and the tool declared task support."""

    state: Any = None


@dataclass(frozen=True)
class Failed:
    """Ends the call (or task) with a JSON-RPC error, for failures of the
    request itself rather than of the work."""

    code: int
    message: str


class Call(Inputs):
    """One round of a call of one tool: its name and arguments, plus the
    answers, state and client of :class:`~airlock_guest.inputs.Inputs`."""

    def __init__(self, name: str, arguments: dict[str, Any], round: wit.Round) -> None:
        super().__init__(round)
        self.name = name
        self.arguments = arguments

    def args(self, cls: type[T]) -> T:
        """The arguments as dataclass ``cls`` (keys it does not declare are
        ignored). Raises :class:`ToolError` when they do not fit."""
        try:
            return from_mapping(cls, self.arguments)
        except ValueError as err:
            raise ToolError(f"invalid arguments for `{self.name}`: {err}") from None


Handler = Callable[[Call], Any]


@dataclass(frozen=True)
class Registered:
    """A tool as listed, and its handler."""

    listing: wit.Tool
    handler: Handler


_TOOLS: dict[str, Registered] = {}


def tool(
    description: str,
    *,
    name: str | None = None,
    title: str | None = None,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    task_support: wit.TaskSupport = wit.TaskSupport.NEVER,
    app: str | None = None,
    visibility: Iterable[Visibility | str] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[Handler], Handler]:
    """Declares the decorated function a tool, named after it unless
    ``name`` is given. ``input_schema`` is the JSON Schema of its arguments
    (an object schema; by default one that takes anything); the hints
    (``read_only`` ...) are shown to clients, which must not trust them.
    ``app`` names the ``ui://`` resource of the MCP App that renders its
    results, ``visibility`` who may call it (:class:`~airlock_guest.apps.Visibility`;
    both when unset), ``meta`` any other ``_meta`` (a ``dict``)."""

    def register(handler: Handler) -> Handler:
        tool_name = name or handler.__name__
        if tool_name in _TOOLS:
            raise ValueError(f"tool `{tool_name}` is declared twice")
        hints = (title, read_only, destructive, idempotent, open_world)
        annotations = None
        if any(hint is not None for hint in hints):
            annotations = wit.ToolAnnotations(
                title=title,
                read_only_hint=read_only,
                destructive_hint=destructive,
                idempotent_hint=idempotent,
                open_world_hint=open_world,
            )
        listing = wit.Tool(
            name=tool_name,
            title=title,
            description=description,
            input_schema=to_json(input_schema or {"type": "object"}),
            output_schema=None if output_schema is None else to_json(output_schema),
            annotations=annotations,
            task_support=task_support,
            meta=meta_json(tool_meta(meta, app, visibility)),
        )
        _TOOLS[tool_name] = Registered(listing, handler)
        return handler

    return register


def call_outcome(outcome: Any) -> wit.CallOutcome:
    """What a handler returned, as the contract's ``call-outcome``."""
    if isinstance(outcome, str):
        outcome = Result.text(outcome)
    elif isinstance(outcome, (dict, list)):
        outcome = Result.json(outcome)
    if isinstance(outcome, Result):
        return wit.CallOutcome_Complete(outcome.to_wit())
    if isinstance(outcome, InputRequired):
        return wit.CallOutcome_InputRequired(outcome.to_wit())
    if isinstance(outcome, ContinueAsTask):
        state = None if outcome.state is None else to_json(outcome.state).encode()
        return wit.CallOutcome_ContinueAsTask(state)
    if isinstance(outcome, Failed):
        return wit.CallOutcome_Failed(wit.ProtocolError(code=outcome.code, message=outcome.message))
    raise TypeError(f"a tool handler returned {type(outcome).__name__}, which is not an outcome")


class Tools:
    """The component's ``tools`` export: the tools declared with ``@tool``."""

    def list_tools(self) -> list[wit.Tool]:
        """Every declared tool."""
        return [registered.listing for registered in _TOOLS.values()]

    def call_tool(self, name: str, arguments: str, round: wit.Round) -> wit.CallOutcome:
        """Runs one round of a call."""
        registered = _TOOLS.get(name)
        if registered is None:
            return call_outcome(Result.error(f"unknown tool `{name}`"))
        try:
            parsed = json.loads(arguments)
            if not isinstance(parsed, dict):
                raise ToolError(f"the arguments of `{name}` must be a JSON object")
            return call_outcome(registered.handler(Call(name, parsed, round)))
        except ToolError as err:
            return call_outcome(Result.error(err.message))
