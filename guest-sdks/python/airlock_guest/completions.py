"""Argument completion for prompts and resource templates.

``@completer(prompt="greet", argument="name")`` (or ``template=...``)
declares a function that suggests values; :class:`Completions` is the
export: ``from airlock_guest.completions import Completions, completer``.
A completer takes the :class:`CompletionRequest` and returns a list of
values or a :class:`Completion`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from wit_world.exports import completions as wit_completions

MAX_VALUES = 100
"""Most values one completion may hold; the host cuts longer lists."""


@dataclass(frozen=True)
class CompletionRequest:
    """What is being completed, and what the user has typed so far."""

    prompt: str | None
    """The prompt whose argument is completed (else ``None``)."""
    template: str | None
    """The resource template whose variable is completed (else ``None``)."""
    argument: str
    value: str
    context: dict[str, str]
    """Values already given for the other arguments."""


@dataclass
class Completion:
    """Suggested values."""

    values: list[str]
    total: int | None = None
    has_more: bool = False

    @classmethod
    def matching(cls, candidates: Iterable[str], typed: str) -> Completion:
        """The candidates that start with ``typed`` (case-insensitive), at
        most :data:`MAX_VALUES`, with the count of all of them."""
        found = [c for c in candidates if c.lower().startswith(typed.lower())]
        return cls(values=found[:MAX_VALUES], total=len(found), has_more=len(found) > MAX_VALUES)


Completer = Callable[[CompletionRequest], Any]

_COMPLETERS: dict[tuple[str, str, str], Completer] = {}


def completer(
    *, argument: str, prompt: str | None = None, template: str | None = None
) -> Callable[[Completer], Completer]:
    """Declares the decorated function the completer of ``argument`` of
    prompt ``prompt`` or of resource template ``template`` (one of the two)."""
    if (prompt is None) == (template is None):
        raise ValueError("a completer is for exactly one of `prompt` and `template`")
    key = ("prompt", prompt, argument) if prompt is not None else ("template", template, argument)

    def register(function: Completer) -> Completer:
        _COMPLETERS[key] = function
        return function

    return register


class Completions:
    """The component's ``completions`` export."""

    def complete(self, request: wit_completions.CompletionRequest) -> wit_completions.Completion:
        """Suggests values for one argument; none when no completer is declared."""
        target = request.target
        is_prompt = isinstance(target, wit_completions.CompletionTarget_Prompt)
        key = ("prompt" if is_prompt else "template", target.value, request.argument_name)
        asked = CompletionRequest(
            prompt=target.value if is_prompt else None,
            template=None if is_prompt else target.value,
            argument=request.argument_name,
            value=request.argument_value,
            context=dict(request.context),
        )
        function = _COMPLETERS.get(key)
        found = Completion(values=[]) if function is None else function(asked)
        if not isinstance(found, Completion):
            found = Completion(values=list(found))
        return wit_completions.Completion(
            values=found.values[:MAX_VALUES], total=found.total, has_more=found.has_more or len(found.values) > MAX_VALUES
        )
