"""Prompts: ``@prompt(...)`` declares one, :class:`Prompts` is the export.

A component that offers prompts imports the export into its app module:
``from airlock_guest.prompts import Prompts, prompt``. A prompt's handler
takes the :class:`PromptRequest` and returns a :class:`PromptResult`, a
``str`` (one user message), or an
:class:`~airlock_guest.asking.InputRequired` (prompts run in rounds like
tools). Raising :class:`InvalidArguments` answers the client with -32602.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from wit_world.exports import prompts as wit_prompts
from wit_world.imports import types as wit

from .asking import InputRequired
from .content import meta_json, text_block
from .inputs import Inputs


class InvalidArguments(Exception):
    """The arguments are wrong: the client gets -32602 with this message."""


@dataclass(frozen=True)
class Argument:
    """One (string) argument a prompt takes."""

    name: str
    description: str | None = None
    title: str | None = None
    required: bool = False


class PromptRequest(Inputs):
    """One round of a ``prompts/get``: the prompt's name and arguments."""

    def __init__(self, name: str, arguments: dict[str, str], round: wit.Round) -> None:
        super().__init__(round)
        self.name = name
        self.arguments = arguments

    def argument(self, name: str) -> str | None:
        """The value of argument ``name``, if given."""
        return self.arguments.get(name)


class PromptResult:
    """The messages of a prompt; methods chain."""

    def __init__(self, description: str | None = None) -> None:
        self.description = description
        self.messages: list[wit_prompts.PromptMessage] = []

    def user(self, text: str) -> PromptResult:
        """Adds a user message of text."""
        return self.message(wit.Role.USER, text_block(text))

    def assistant(self, text: str) -> PromptResult:
        """Adds an assistant message of text."""
        return self.message(wit.Role.ASSISTANT, text_block(text))

    def message(self, role: wit.Role, block: wit.ContentBlock) -> PromptResult:
        """Adds a message of any content block."""
        self.messages.append(wit_prompts.PromptMessage(role=role, content=block))
        return self


PromptHandler = Callable[[PromptRequest], Any]

_PROMPTS: dict[str, tuple[wit_prompts.Prompt, PromptHandler]] = {}


def prompt(
    description: str,
    *,
    name: str | None = None,
    title: str | None = None,
    arguments: list[Argument] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Callable[[PromptHandler], PromptHandler]:
    """Declares the decorated function a prompt, named after it unless
    ``name`` is given, listed with ``meta`` (a ``dict``) as its ``_meta``."""

    def register(handler: PromptHandler) -> PromptHandler:
        prompt_name = name or handler.__name__
        if prompt_name in _PROMPTS:
            raise ValueError(f"prompt `{prompt_name}` is declared twice")
        listing = wit_prompts.Prompt(
            name=prompt_name,
            title=title,
            description=description,
            arguments=[
                wit_prompts.PromptArgument(
                    name=arg.name, title=arg.title, description=arg.description, required=arg.required
                )
                for arg in arguments or []
            ],
            meta=meta_json(meta),
        )
        _PROMPTS[prompt_name] = (listing, handler)
        return handler

    return register


def prompt_outcome(outcome: Any) -> wit_prompts.PromptOutcome:
    """What a prompt handler returned, as the contract's ``prompt-outcome``."""
    if isinstance(outcome, str):
        outcome = PromptResult().user(outcome)
    if isinstance(outcome, PromptResult):
        result = wit_prompts.PromptResult(description=outcome.description, messages=list(outcome.messages))
        return wit_prompts.PromptOutcome_Complete(result)
    if isinstance(outcome, InputRequired):
        return wit_prompts.PromptOutcome_InputRequired(outcome.to_wit())
    raise TypeError(f"a prompt handler returned {type(outcome).__name__}, which is not an outcome")


class Prompts:
    """The component's ``prompts`` export: the prompts declared with ``@prompt``."""

    def list_prompts(self) -> list[wit_prompts.Prompt]:
        """Every declared prompt."""
        return [listing for listing, _ in _PROMPTS.values()]

    def get_prompt(self, name: str, arguments: list[tuple[str, str]], round: wit.Round) -> wit_prompts.PromptOutcome:
        """Renders one round of a prompt."""
        registered = _PROMPTS.get(name)
        if registered is None:
            return wit_prompts.PromptOutcome_InvalidArguments(f"unknown prompt `{name}`")
        try:
            return prompt_outcome(registered[1](PromptRequest(name, dict(arguments), round)))
        except InvalidArguments as err:
            return wit_prompts.PromptOutcome_InvalidArguments(str(err))
