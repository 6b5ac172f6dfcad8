"""Drives one of Airlock's sample tools to completion with the official MCP Python SDK.

Usage:
    drive.py --mode auto|legacy --flow FLOW --url http://127.0.0.1:PORT/mcp [--oauth]
    drive.py --mode auto|legacy --flow FLOW --stdio -- AIRLOCK serve --tools DIR --stdio --no-cache

`--mode auto` is the SDK's default negotiation (`server/discover`, falling back to
`initialize`); `--mode legacy` forces the `initialize` handshake (a 2025-era,
stateful session). The flows call a sample tool and answer whatever it asks
through the client's elicitation, sampling and roots callbacks, with the fixed
answers below, so the caller can check that the final result used them.

The `task-*` flows declare the tasks extension (`tasks_extension.py`): their
tool call becomes a task, which the extension polls to its result, answering
its input requests through the same callbacks.

With `--oauth` the client authorizes with the SDK's OAuth client (`OAuthClientProvider`): on a 401
it discovers the protected-resource and authorization server metadata, registers, and runs the
authorization code flow with PKCE; on a 403 `insufficient_scope` it authorizes again for the scopes
the challenge names. The driver plays the user's browser: its redirect handler follows the
authorization URL to the redirect it answers with, and hands the code to the callback handler. The
report then also lists the scopes of each authorization request and the status of every HTTP
response of the MCP endpoint.

On success prints one JSON line: the negotiated protocol version, how it was
negotiated, every callback invocation (what was asked, what was answered), for
the task flows every step of the task, and the final tool result. On any
failure (including a result with `isError`) prints a one-line reason to stderr
and exits 1; exits 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from dataclasses import dataclass, field
from typing import Any

from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.auth import OAuthClientProvider
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl
from tasks_extension import TasksExtension

FLOWS: dict[str, tuple[str, dict[str, Any]]] = {
    "work-items": ("update_work_item", {"workItemId": 4711, "fields": {"State": "Resolved"}}),
    "deploy": ("deploy", {"service": "billing", "environment": "production"}),
    "summarize": (
        "summarize",
        {"text": "Airlock hosts MCP tools as WebAssembly components, one fresh instance per request."},
    ),
    "workspace": ("list_roots", {}),
    "task-compute": ("slow_compute", {"seconds": 1, "label": "sdk"}),
    "task-confirm": ("confirm_delete", {"filename": "x.txt"}),
}
"""Each flow's tool and arguments."""

TASK_FLOWS = frozenset(flow for flow in FLOWS if flow.startswith("task-"))
"""The flows whose client declares the tasks extension."""

RESOLUTION = "Duplicate"
"""The answer to the work item's `resolution` form."""

DUPLICATE_OF = 1234
"""The answer to the work item's `duplicateOf` form."""

SUMMARY = "Airlock runs each tool call in a fresh sandbox (py-sdk-summary-7f3a)."
"""The text the sampling callback's "model" writes."""

MODEL = "py-sdk-test-model"
"""The model name the sampling callback reports."""

ROOTS = [
    types.Root(uri="file:///srv/py-sdk-e2e/app", name="App"),
    types.Root(uri="file:///srv/py-sdk-e2e/notes.md"),
]
"""The roots the roots callback lists."""


@dataclass
class Answers:
    """The client's callbacks, answering with the fixed values above and recording each exchange."""

    log: list[dict[str, Any]] = field(default_factory=list)

    async def elicit(self, _ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Fills in a form: the first field the form asks for that this client knows."""
        if not isinstance(params, types.ElicitRequestFormParams):
            raise RuntimeError(f"unexpected URL elicitation: {params.message}")
        fields = (params.requested_schema or {}).get("properties", {})
        known: dict[str, Any] = {"resolution": RESOLUTION, "duplicateOf": DUPLICATE_OF, "ok": True, "confirm": True}
        content = {name: known[name] for name in fields if name in known}
        if not content:
            raise RuntimeError(f"elicitation form with no known field: {sorted(fields)}")
        self.log.append({"kind": "elicitation", "message": params.message, "fields": sorted(fields), "content": content})
        return types.ElicitResult(action="accept", content=content)

    async def sample(self, _ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        """Plays the model: answers with SUMMARY, whatever the prompt."""
        prompt = [m.content.text for m in params.messages if isinstance(m.content, types.TextContent)]
        self.log.append(
            {
                "kind": "sampling",
                "systemPrompt": params.system_prompt,
                "messages": prompt,
                "maxTokens": params.max_tokens,
                "content": SUMMARY,
            }
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SUMMARY), model=MODEL
        )

    async def roots(self, _ctx: ClientRequestContext) -> types.ListRootsResult:
        """Lists ROOTS."""
        self.log.append({"kind": "roots", "content": [str(r.uri) for r in ROOTS]})
        return types.ListRootsResult(roots=ROOTS)


REDIRECT_URI = "http://127.0.0.1/callback"
"""The OAuth client's redirect URI; the driver reads the redirect instead of following it."""


@dataclass
class Browser:
    """The OAuth client's user agent: approves each authorization request and records it."""

    log: list[dict[str, Any]] = field(default_factory=list)
    pending: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        """Visits the authorization URL and keeps the code of the redirect back to the client."""
        asked = parse_qs(urlparse(authorization_url).query)
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(authorization_url)
        location = response.headers.get("location", "")
        if response.status_code not in (302, 303) or not location.startswith(REDIRECT_URI):
            raise RuntimeError(f"authorization was not approved ({response.status_code}): {response.text}")
        answer = {name: values[0] for name, values in parse_qs(urlparse(location).query).items()}
        self.log.append({"scope": asked.get("scope", [None])[0], "resource": asked.get("resource", [None])[0]})
        self.pending = AuthorizationCodeResult(code=answer["code"], state=answer.get("state"), iss=answer.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        """Hands the code of the last redirect to the OAuth client."""
        if self.pending is None:
            raise RuntimeError("the callback came before any redirect")
        result, self.pending = self.pending, None
        return result


@dataclass
class MemoryStorage:
    """Keeps the OAuth client's registration and tokens for the run."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class FlowFailed(Exception):
    """The flow ended, but not with a successful result."""


async def drive(args: argparse.Namespace, server: str | StdioServerParameters) -> dict[str, Any]:
    """Connects, calls the flow's tool, and returns the report to print."""
    tool, arguments = FLOWS[args.flow]
    answers = Answers()
    tasks = TasksExtension() if args.flow in TASK_FLOWS else None
    browser, statuses = Browser(), []
    http = None
    if args.oauth:
        endpoint = server

        async def record(response: httpx2.Response) -> None:
            if str(response.request.url) == endpoint:
                statuses.append(response.status_code)

        auth = OAuthClientProvider(
            server_url=endpoint,
            client_metadata=OAuthClientMetadata(
                client_name="airlock-e2e-python", redirect_uris=[AnyUrl(REDIRECT_URI)], token_endpoint_auth_method="none"
            ),
            storage=MemoryStorage(),
            redirect_handler=browser.redirect,
            callback_handler=browser.callback,
        )
        http = create_mcp_http_client(auth=auth)
        http.event_hooks["response"].append(record)
        server = streamable_http_client(server, http_client=http)
    client = Client(
        server,
        mode=args.mode,
        read_timeout_seconds=args.timeout,
        elicitation_callback=answers.elicit,
        sampling_callback=answers.sample,
        list_roots_callback=answers.roots,
        extensions=[tasks] if tasks else None,
        client_info=types.Implementation(name="airlock-e2e-python", version="1.0.0"),
    )
    async with http if http is not None else contextlib.nullcontext(), client:
        session = client.session
        negotiated = {
            "protocolVersion": client.protocol_version,
            "handshake": "initialize" if session.initialize_result is not None else "discover",
        }
        # Once, right after connecting, as clients do: a server still loading
        # its components answers the list when they are loaded.
        listed = await client.list_tools()
        if tool not in [t.name for t in listed.tools]:
            raise FlowFailed(f"the server does not list {tool}: {[t.name for t in listed.tools]}")
        result = await client.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    if result.is_error:
        raise FlowFailed(f"{tool} returned isError: {text}")
    return {
        "mode": args.mode,
        "flow": args.flow,
        **negotiated,
        "tools": sorted(t.name for t in listed.tools),
        "callbacks": answers.log,
        "authorizations": browser.log,
        "statuses": statuses,
        "task": tasks.log if tasks else None,
        "text": text,
        "structuredContent": result.structured_content,
        "result": result.model_dump(by_alias=True, mode="json", exclude_none=True),
    }


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, str | StdioServerParameters]:
    """Parses the options; everything after `--` is the stdio server's command line."""
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["auto", "legacy"], required=True)
    parser.add_argument("--flow", choices=sorted(FLOWS), required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="the Streamable HTTP endpoint")
    target.add_argument("--stdio", action="store_true", help="launch the command after `--` and talk over stdio")
    parser.add_argument("--oauth", action="store_true", help="authorize with OAuth (HTTP only)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for the whole run (default 60)")
    args = parser.parse_args(argv)
    if args.stdio:
        if not command:
            parser.error("--stdio needs the server's command after `--`")
        return args, StdioServerParameters(command=command[0], args=command[1:], env={"NO_COLOR": "1"})
    if command:
        parser.error("a command after `--` goes with --stdio only")
    if args.oauth and args.stdio:
        parser.error("--oauth goes with --url only")
    return args, args.url


def describe(error: BaseException) -> str:
    """One line naming every leaf of an exception (group)."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions)
    if isinstance(error, FlowFailed):
        return str(error)
    return f"{type(error).__name__}: {error}"


async def main_async(args: argparse.Namespace, server: str | StdioServerParameters) -> dict[str, Any]:
    """Runs the flow under the overall timeout."""
    with anyio.fail_after(args.timeout):
        return await drive(args, server)


def main() -> int:
    """Entry point: prints the report, or the reason for the failure."""
    args, server = parse_args(sys.argv[1:])
    try:
        report = anyio.run(main_async, args, server)
    except BaseException as error:  # noqa: BLE001 -- every failure is reported the same way
        if isinstance(error, KeyboardInterrupt):
            raise
        traceback.print_exception(error, file=sys.stderr)
        reason = "timed out" if isinstance(error, TimeoutError) else describe(error)
        print(f"drive.py: flow {args.flow} (mode {args.mode}) failed: {reason}", file=sys.stderr)
        return 1
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
