"""`sha256`: a plain tool. Hashes text with SHA-256 and returns the hex
digest, like the Rust `hash` sample's `sha256`. Written for the CPython
the component runs (3.14): the `type` statement needs 3.12, so a build
must not parse the app with an older Python of the build machine."""

import hashlib

import airlock_guest as airlock
from airlock_guest import Tools  # noqa: F401  (the component's export)

type Digest = str


@airlock.tool(
    "Returns the SHA-256 digest of a text (UTF-8), in lowercase hex.",
    name="sha256",
    title="SHA-256 (Python)",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to hash."}},
        "required": ["text"],
    },
    read_only=True,
    idempotent=True,
    open_world=False,
)
def sha256(call: airlock.Call) -> Digest:
    text = call.arguments.get("text")
    if not isinstance(text, str):
        raise airlock.ToolError("`text` must be a string")
    return hashlib.sha256(text.encode()).hexdigest()
