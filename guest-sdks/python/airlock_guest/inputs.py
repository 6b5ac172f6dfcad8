"""What one round of a call knows: the client's answers by key, the state
the tool returned last round, and what the client can answer.

Every round runs in a fresh instance, so this is all a tool has from
earlier rounds. :class:`Inputs` is shared by tool calls, prompt requests
and resource reads.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, TypeVar

from wit_world.imports import types as wit

T = TypeVar("T")


def from_mapping(cls: type[T], mapping: Any) -> T:
    """Builds dataclass ``cls`` from a JSON object, ignoring keys it does not
    declare. Raises ``ValueError`` when ``mapping`` is not an object or lacks
    a field without a default."""
    if not isinstance(mapping, dict):
        raise ValueError(f"expected a JSON object, got {type(mapping).__name__}")
    names = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    try:
        return cls(**{k: v for k, v in mapping.items() if k in names})
    except TypeError as err:
        raise ValueError(str(err)) from None


@dataclass(frozen=True)
class ClientCapabilities:
    """What the client declared it can answer, on this very request."""

    can_elicit_form: bool
    can_elicit_url: bool
    can_sample: bool
    can_sample_with_tools: bool
    can_sample_with_context: bool
    can_list_roots: bool
    can_use_tasks: bool

    @classmethod
    def from_wit(cls, caps: wit.ClientCapabilities) -> ClientCapabilities:
        """From the contract's ``client-capabilities``."""
        return cls(
            can_elicit_form=caps.elicitation_form,
            can_elicit_url=caps.elicitation_url,
            can_sample=caps.sampling,
            can_sample_with_tools=caps.sampling_tools,
            can_sample_with_context=caps.sampling_context,
            can_list_roots=caps.roots,
            can_use_tasks=caps.tasks,
        )


@dataclass(frozen=True)
class Elicitation:
    """The user's answer to a form or URL elicitation."""

    action: str
    """``"accept"``, ``"decline"`` or ``"cancel"``."""
    content: dict[str, Any] | None
    """The submitted form (form mode, accepted only)."""

    @property
    def accepted(self) -> bool:
        """True when the user submitted (or, for a URL, agreed)."""
        return self.action == "accept"

    def accepted_content(self, cls: type[T] | None = None) -> Any:
        """The submitted form when accepted, else ``None``; as dataclass
        ``cls`` when given (``None`` if the form does not fit it)."""
        if not self.accepted or self.content is None:
            return None
        if cls is None:
            return self.content
        try:
            return from_mapping(cls, self.content)
        except ValueError:
            return None


@dataclass(frozen=True)
class Sampled:
    """The client's model's reply to a sampling request."""

    model: str
    stop_reason: str | None
    content: list[wit.SamplingContent]

    @property
    def text(self) -> str:
        """The text blocks of the reply, joined."""
        return "".join(block.value.text for block in self.content if isinstance(block, wit.SamplingContent_Text))

    @property
    def tool_uses(self) -> list[wit.ToolUse]:
        """The tools the model asked to call."""
        return [block.value for block in self.content if isinstance(block, wit.SamplingContent_ToolUse)]


@dataclass(frozen=True)
class Root:
    """A root directory or file the client exposes."""

    uri: str
    name: str | None


class Inputs:
    """One round: its number, the answers by key, the state, the client."""

    def __init__(self, round: wit.Round) -> None:
        self._round = round
        self._responses = dict(round.responses)

    @property
    def round(self) -> int:
        """1 on a first call; one more on each retry that carried state."""
        return self._round.number

    @property
    def is_task(self) -> bool:
        """True when this round runs as a task, in the background."""
        return self._round.task

    @property
    def client(self) -> ClientCapabilities:
        """What the client can answer on this request."""
        return ClientCapabilities.from_wit(self._round.client)

    @property
    def state_bytes(self) -> bytes | None:
        """The state bytes the tool returned last round, verified by the host."""
        return self._round.state

    def state(self, default: Any = None) -> Any:
        """The JSON state the tool returned last round (see
        ``InputRequired.with_state``), or ``default`` when there is none or
        it is not JSON."""
        if self._round.state is None:
            return default
        try:
            return json.loads(self._round.state)
        except ValueError:
            return default

    def response(self, key: str) -> wit.InputResponse | None:
        """The raw answer under ``key``, if the client sent one."""
        return self._responses.get(key)

    def elicitation(self, key: str) -> Elicitation | None:
        """The answer to the elicitation asked under ``key``."""
        answer = self._responses.get(key)
        if not isinstance(answer, wit.InputResponse_Elicitation):
            return None
        content = json.loads(answer.value.content) if answer.value.content is not None else None
        return Elicitation(action=answer.value.action.name.lower(), content=content)

    def sampling(self, key: str) -> Sampled | None:
        """The model's reply to the sampling request asked under ``key``."""
        answer = self._responses.get(key)
        if not isinstance(answer, wit.InputResponse_Sampling):
            return None
        reply = answer.value
        return Sampled(model=reply.model, stop_reason=reply.stop_reason, content=list(reply.content))

    def roots(self, key: str) -> list[Root] | None:
        """The client's roots, asked for under ``key``."""
        answer = self._responses.get(key)
        if not isinstance(answer, wit.InputResponse_Roots):
            return None
        return [Root(uri=root.uri, name=root.name) for root in answer.value]
