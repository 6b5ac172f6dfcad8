"""Asking the client for input mid-call (Multi Round-Trip Requests).

A handler that needs something returns an :class:`InputRequired` naming
each request by a key it chooses: a form, a URL to visit, a completion from
the client's model, the client's roots. The client answers and calls again;
the next round, in a fresh instance, reads the answers by the same keys
(``call.elicitation(key)``, ``call.sampling(key)``, ``call.roots(key)``) and
the state this round attached (``call.state()``). Airlock seals the state, so
the client can neither read nor change it.
"""

from __future__ import annotations

import json
from typing import Any

from wit_world.imports import types as wit

from .content import to_json
from .inputs import ClientCapabilities


class Sampling:
    """A request for a completion from the client's model."""

    def __init__(
        self,
        max_tokens: int,
        *,
        system_prompt: str | None = None,
        temperature: float | None = None,
        model_hints: list[str] | None = None,
        stop_sequences: list[str] | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.temperature = temperature
        self.model_hints = list(model_hints or [])
        self.stop_sequences = list(stop_sequences or [])
        self.messages: list[wit.SamplingMessage] = []

    def user(self, text: str) -> Sampling:
        """Adds a user message."""
        return self._message(wit.Role.USER, text)

    def assistant(self, text: str) -> Sampling:
        """Adds an assistant message."""
        return self._message(wit.Role.ASSISTANT, text)

    def _message(self, role: wit.Role, text: str) -> Sampling:
        block = wit.SamplingContent_Text(wit.TextContent(text=text, annotations=None))
        self.messages.append(wit.SamplingMessage(role=role, content=[block]))
        return self

    def to_wit(self) -> wit.SamplingRequest:
        """The contract's ``sampling-request``."""
        preferences = None
        if self.model_hints:
            preferences = wit.ModelPreferences(
                hints=[wit.ModelHint(name=hint) for hint in self.model_hints],
                cost_priority=None,
                speed_priority=None,
                intelligence_priority=None,
            )
        return wit.SamplingRequest(
            messages=list(self.messages),
            max_tokens=self.max_tokens,
            system_prompt=self.system_prompt,
            model_preferences=preferences,
            include_context=None,
            temperature=self.temperature,
            stop_sequences=list(self.stop_sequences),
            metadata=None,
            tools=[],
            tool_choice=None,
        )


class InputRequired:
    """What a round needs before the call can finish: requests by key, and
    the state for the next round. Methods chain.

    With state and no requests it asks the client simply to call again (a
    state-only round)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, wit.InputRequest]] = []
        self.state: bytes | None = None

    def request(self, key: str, request: wit.InputRequest) -> InputRequired:
        """Adds a request under ``key`` (replacing one with the same key)."""
        self.requests = [(k, r) for k, r in self.requests if k != key]
        self.requests.append((key, request))
        return self

    def elicit_form(self, key: str, message: str, schema: dict[str, Any] | str) -> InputRequired:
        """Asks the user to fill in a form: ``schema`` is a flat JSON Schema
        object of primitive properties. Never ask for secrets."""
        schema_text = schema if isinstance(schema, str) else to_json(schema)
        form = wit.FormElicitation(message=message, requested_schema=schema_text)
        return self.request(key, wit.InputRequest_Elicitation(wit.ElicitationRequest_Form(form)))

    def elicit_url(self, key: str, message: str, url: str) -> InputRequired:
        """Sends the user to ``url`` to complete a step out of band."""
        visit = wit.UrlElicitation(message=message, url=url)
        return self.request(key, wit.InputRequest_Elicitation(wit.ElicitationRequest_Url(visit)))

    def sample(self, key: str, sampling: Sampling) -> InputRequired:
        """Asks the client's model for a completion."""
        return self.request(key, wit.InputRequest_Sampling(sampling.to_wit()))

    def list_roots(self, key: str) -> InputRequired:
        """Asks for the client's roots."""
        return self.request(key, wit.InputRequest_Roots())

    def with_state(self, value: Any) -> InputRequired:
        """Carries ``value`` (any JSON value) to the next round, where
        ``call.state()`` returns it."""
        self.state = json.dumps(value, separators=(",", ":")).encode()
        return self

    def with_state_bytes(self, data: bytes) -> InputRequired:
        """Carries raw bytes to the next round (``call.state_bytes``)."""
        self.state = bytes(data)
        return self

    def retain_supported(self, client: ClientCapabilities) -> InputRequired:
        """Drops the requests ``client`` cannot answer (the host would
        otherwise fail the call with -32021)."""
        self.requests = [(k, r) for k, r in self.requests if supports(client, r)]
        return self

    def to_wit(self) -> wit.InputRequired:
        """The contract's ``input-required``."""
        return wit.InputRequired(requests=list(self.requests), state=self.state)


def supports(client: ClientCapabilities, request: wit.InputRequest) -> bool:
    """Whether ``client`` can answer ``request``."""
    if isinstance(request, wit.InputRequest_Roots):
        return client.can_list_roots
    if isinstance(request, wit.InputRequest_Sampling):
        return client.can_sample
    if isinstance(request.value, wit.ElicitationRequest_Url):
        return client.can_elicit_url
    return client.can_elicit_form
