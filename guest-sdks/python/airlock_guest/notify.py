"""Reporting changes the host cannot see by itself.

Lists are read once, when the component loads; a component whose lists
depend on something outside it reports a change and the host lists it again
and tells the clients that subscribed.
"""

from __future__ import annotations

from wit_world.imports import host

_KINDS = {"tools": host.ListKind.TOOLS, "prompts": host.ListKind.PROMPTS, "resources": host.ListKind.RESOURCES}


def list_changed(kind: str) -> None:
    """Reports that this component's list of ``kind`` (``"tools"``,
    ``"prompts"`` or ``"resources"``) has changed."""
    host.notify_list_changed(_KINDS[kind])


def resource_updated(uri: str) -> None:
    """Reports that the resource at ``uri`` has changed."""
    host.notify_resource_updated(uri)
