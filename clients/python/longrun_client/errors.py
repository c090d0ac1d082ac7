"""Exceptions for the longrun env server's error bodies: ``{"error": {"code", "message"}}``."""

from __future__ import annotations


class LongrunError(Exception):
    """Any error answered by the server (``status`` and ``code`` come from its reply) or met reaching it."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self) -> str:
        where = f"HTTP {self.status} {self.code}: " if self.status is not None else ""
        return f"{where}{self.message}"


class ServerUnreachable(LongrunError):
    """The server could not be reached (not running, wrong URL, timeout)."""


class BadRequest(LongrunError):
    """400: malformed JSON, an invalid body, bad kwargs or reset options."""


class Unauthorized(LongrunError):
    """401: the bearer token is missing or wrong."""


class NotFound(LongrunError):
    """404: unknown route, env id or session (closed, or reaped after being idle)."""


class UnknownEnv(NotFound):
    """404 ``unknown_env``: the env id is not registered on the server."""


class UnknownSession(NotFound):
    """404 ``unknown_session``: the session does not exist any more."""


class ResetNeeded(LongrunError):
    """409 ``reset_needed`` / ``episode_over``: step before reset, or after the episode ended."""


class SessionBusy(LongrunError):
    """409 ``session_busy``: too many requests already queued on this session."""


class PayloadTooLarge(LongrunError):
    """413: the request body is over the server's ``--max-body``."""


class InvalidAction(LongrunError):
    """422: the action is not in the env's action space."""


class TooManySessions(LongrunError):
    """429: the server holds its ``--max-sessions``; close sessions or retry later."""


class ServerError(LongrunError):
    """5xx: the env or the server failed."""


_BY_CODE = {
    "unknown_env": UnknownEnv,
    "unknown_session": UnknownSession,
    "reset_needed": ResetNeeded,
    "episode_over": ResetNeeded,
    "session_busy": SessionBusy,
}
_BY_STATUS = {400: BadRequest, 401: Unauthorized, 404: NotFound, 413: PayloadTooLarge, 422: InvalidAction, 429: TooManySessions}


def error_from_reply(status: int, body: object) -> LongrunError:
    """The exception for an error reply (its body parsed as JSON when possible)."""
    code = None
    message = f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        message = str(body["error"].get("message", message))
    elif isinstance(body, str) and body:
        message = body[:500]
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status) or (ServerError if status >= 500 else LongrunError)
    return cls(message, status=status, code=code)
