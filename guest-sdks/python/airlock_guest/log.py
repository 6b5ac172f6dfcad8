"""Writing to the host's log (and to the client, when it asked for log
messages on this request), and reporting progress.

``from airlock_guest import log`` then ``log.info("...")``.
"""

from __future__ import annotations

from wit_world.imports import host


def debug(message: str) -> None:
    """Logs at level debug."""
    host.log(host.LogLevel.DEBUG, message)


def info(message: str) -> None:
    """Logs at level info."""
    host.log(host.LogLevel.INFO, message)


def notice(message: str) -> None:
    """Logs at level notice."""
    host.log(host.LogLevel.NOTICE, message)


def warning(message: str) -> None:
    """Logs at level warning."""
    host.log(host.LogLevel.WARNING, message)


def error(message: str) -> None:
    """Logs at level error."""
    host.log(host.LogLevel.ERROR, message)


def progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """Reports progress of the current call. ``progress`` must grow with
    each report (reports that do not grow are dropped)."""
    host.progress(float(progress), None if total is None else float(total), message)
