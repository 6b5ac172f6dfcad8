"""The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) as a client extension of the MCP Python SDK.

The SDK knows no task methods on the 2026-07-28 wire, but it lets a client
extension claim a new `tools/call` result shape and finish it. `TasksExtension`
declares the extension on every request, claims `resultType: "task"`
(`CreateTaskResult`) and resolves it to the tool's ordinary result: it polls
`tasks/get`, hands each input request of an `input_required` task to the
client's own callbacks (`ClientSession.dispatch_input_request`) and sends the
answers with `tasks/update`. Both task methods go through the SDK's generic
`ClientSession.send_request`, whose `name_param` puts the task id in the
`Mcp-Name` header on HTTP.

Every step is recorded in `TasksExtension.log`, so a caller can check what
the server did: the created task, each status seen, each update sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import ClientRequestContext
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

IDENTIFIER = "io.modelcontextprotocol/tasks"
"""The extension's identifier, declared under `clientCapabilities.extensions`."""

DEFAULT_POLL_SECONDS = 0.5
"""How long to wait between polls when the task names no `pollIntervalMs`."""

MAX_POLLS = 600
"""Polls of one task before giving up (the caller's overall timeout usually ends it sooner)."""

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The statuses of a task."""


class TaskParams(types.RequestParams):
    """The params of `tasks/get`: which task."""

    task_id: str


class UpdateTaskParams(TaskParams):
    """The params of `tasks/update`: the answers to some of the task's input requests, by key."""

    input_responses: types.InputResponses


class GetTaskRequest(types.Request[TaskParams, Literal["tasks/get"]]):
    """`tasks/get`: the task's status, and its input requests, result or error."""

    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"


class UpdateTaskRequest(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    """`tasks/update`: answers the task's input requests."""

    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


class CreateTaskResult(types.Result):
    """A `tools/call` answered with a task (`resultType: "task"`): the task, flattened."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: TaskStatus
    status_message: str | None = None
    poll_interval_ms: int | None = None


class TaskState(types.Result):
    """A `tasks/get` result: the task, plus its input requests, result or error by status."""

    result_type: Literal["complete"]
    task_id: str
    status: TaskStatus
    status_message: str | None = None
    poll_interval_ms: int | None = None
    input_requests: types.InputRequests | None = None
    result: types.CallToolResult | None = None
    error: types.ErrorData | None = None


class Acknowledgement(types.Result):
    """The empty answer of `tasks/update`."""

    result_type: Literal["complete"]


class TaskFailed(Exception):
    """The task ended without a result: failed, cancelled, or never ended."""


class TasksExtension(ClientExtension):
    """Declares the tasks extension and runs every task a `tools/call` becomes to its result."""

    identifier = IDENTIFIER

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        """What happened, in order: `created`, then `status` and `update` entries."""

    def claims(self) -> Sequence[ResultClaim[Any]]:
        """Claims `resultType: "task"` on `tools/call`."""
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        """Polls the task until it ends, answering its input requests; returns its result."""
        self.log.append({"kind": "created", "tool": ctx.tool_name, "status": created.status})
        task_id, poll_ms = created.task_id, created.poll_interval_ms
        answered: set[str] = set()
        for _ in range(MAX_POLLS):
            await anyio.sleep(DEFAULT_POLL_SECONDS if poll_ms is None else poll_ms / 1000)
            state = await ctx.session.send_request(
                GetTaskRequest(params=TaskParams(task_id=task_id)),
                TaskState,
                request_read_timeout_seconds=ctx.read_timeout_seconds,
            )
            if state.task_id != task_id:
                raise TaskFailed(f"tasks/get for {task_id} answered for {state.task_id}")
            self.record_status(state)
            poll_ms = state.poll_interval_ms or poll_ms
            match state.status:
                case "completed":
                    if state.result is None:
                        raise TaskFailed(f"task {task_id} completed without a result")
                    return state.result
                case "failed" | "cancelled":
                    reason = state.error.message if state.error else state.status_message
                    raise TaskFailed(f"task {task_id} {state.status}: {reason}")
                case "input_required" if state.input_requests:
                    # Until the server has taken an update in, it may still list the keys answered.
                    unanswered = {k: r for k, r in state.input_requests.items() if k not in answered}
                    if unanswered:
                        await self.answer(ctx, task_id, unanswered)
                        answered.update(unanswered)
                case _:
                    pass
        raise TaskFailed(f"task {task_id} did not end after {MAX_POLLS} polls")

    def record_status(self, state: TaskState) -> None:
        """Logs the status, unless it is the one logged last (polls of a working task repeat)."""
        entry: dict[str, Any] = {"kind": "status", "status": state.status}
        if state.input_requests:
            entry["inputRequests"] = sorted(state.input_requests)
        if self.log[-1] != entry:
            self.log.append(entry)

    async def answer(self, ctx: ClaimContext, task_id: str, requests: types.InputRequests) -> None:
        """Answers every input request through the client's callbacks, in one `tasks/update`."""
        responses: types.InputResponses = {}
        for key, request in requests.items():
            context = ClientRequestContext(session=ctx.session, request_id=key)
            response = await ctx.session.dispatch_input_request(context, request)
            if isinstance(response, types.ErrorData):
                raise TaskFailed(f"the client's callback refused input request {key}: {response.message}")
            responses[key] = response
        await ctx.session.send_request(
            UpdateTaskRequest(params=UpdateTaskParams(task_id=task_id, input_responses=responses)),
            Acknowledgement,
            request_read_timeout_seconds=ctx.read_timeout_seconds,
        )
        self.log.append({"kind": "update", "keys": sorted(responses)})
