"""Write MCP tools for Airlock in Python, as WebAssembly components built
with componentize-py.

A tool is a function declared with :func:`tool`; the app module imports
:class:`Tools` so the component exports it::

    import airlock_guest as airlock
    from airlock_guest import Tools  # the component's export

    @airlock.tool("Greets someone.", input_schema={
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    })
    def greet(call: airlock.Call) -> str:
        return f"Hello, {call.arguments['name']}!"

Every call, and every round of a multi-round call, runs in a fresh instance:
module-level variables start from their build-time values each time. What
the next round needs travels in the state of :class:`InputRequired`, which
Airlock seals. Prompts, resources and completions live in the submodules
:mod:`airlock_guest.prompts`, :mod:`airlock_guest.resources` and
:mod:`airlock_guest.completions`, each with its own export class; MCP Apps
(a tool's HTML App, served as a ``ui://`` resource) in :mod:`airlock_guest.apps`.
"""

from . import log, notify
from .asking import InputRequired, Sampling
from .content import Result
from .inputs import ClientCapabilities, Elicitation, Inputs, Root, Sampled
from .log import progress
from .tools import Call, ContinueAsTask, Failed, TaskSupport, ToolError, Tools, tool

__all__ = [
    "Call",
    "ClientCapabilities",
    "ContinueAsTask",
    "Elicitation",
    "Failed",
    "InputRequired",
    "Inputs",
    "Result",
    "Root",
    "Sampled",
    "Sampling",
    "TaskSupport",
    "ToolError",
    "Tools",
    "log",
    "notify",
    "progress",
    "tool",
]
