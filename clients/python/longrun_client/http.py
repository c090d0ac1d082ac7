"""A minimal JSON-over-HTTP client for the env server (standard library only)."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .errors import LongrunError, ServerUnreachable, error_from_reply

DEFAULT_URL = "http://127.0.0.1:8765"


class LongrunClient:
    """Talks to ``longrun serve env``. ``base_url`` defaults to ``$LONGRUN_ENV_URL``, the token to ``$LONGRUN_SERVE_TOKEN``."""

    def __init__(self, base_url: str | None = None, token: str | None = None, timeout: float = 60.0):
        self.base_url = (base_url or os.environ.get("LONGRUN_ENV_URL") or DEFAULT_URL).rstrip("/")
        self.token = token if token is not None else os.environ.get("LONGRUN_SERVE_TOKEN") or None
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, default=_to_json).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return _parse(resp.read())
        except urllib.error.HTTPError as err:
            raise error_from_reply(err.code, _parse(err.read())) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise ServerUnreachable(f"Cannot reach the longrun env server at {self.base_url}: {reason}") from None

    # Endpoints -----------------------------------------------------------------------------------------------------
    def health(self) -> dict:
        return self.request("GET", "/health")

    def envs(self) -> list[str]:
        return self.request("GET", "/envs")["envs"]

    def tasks(self, env_id: str, split: str | None = None) -> dict[str, list[str]]:
        """The task ids of each split of ``env_id`` (envs defined with ``defineEnv`` and the retail envs), or of
        ``split`` only."""
        if not isinstance(env_id, str) or env_id == "":
            raise ValueError(f"env_id must be a non-empty string, got {env_id!r}")
        path = "/envs/" + urllib.parse.quote(env_id, safe="") + "/tasks"
        if split is not None:
            path += "?split=" + urllib.parse.quote(split, safe="")
        return self.request("GET", path)["splits"]

    def create_session(self, env_id: str, kwargs: dict | None = None, seed: int | None = None, compact_info: bool = False) -> dict:
        body: dict[str, Any] = {"env_id": env_id}
        if kwargs:
            body["kwargs"] = kwargs
        if seed is not None:
            body["seed"] = seed
        if compact_info:
            body["compact_info"] = True
        return self.request("POST", "/sessions", body)

    @staticmethod
    def session_path(session_id: str, route: str = "") -> str:
        """``/sessions/{id}[/route]`` with the id percent-encoded as one path segment, so an id such as
        ``../../envs?x=`` cannot reach another route. ``"."`` and ``".."`` are refused: URL parsers resolve them
        (encoded or not) as dot segments."""
        if not isinstance(session_id, str) or session_id in ("", ".", ".."):
            raise ValueError(f"A session id must be a non-empty string other than '.' and '..', got {session_id!r}")
        path = "/sessions/" + urllib.parse.quote(session_id, safe="")
        return f"{path}/{route}" if route else path

    def reset(self, session_id: str, seed: int | None = None, options: dict | None = None) -> dict:
        body: dict[str, Any] = {}
        if seed is not None:
            body["seed"] = seed
        if options is not None:
            body["options"] = options
        return self.request("POST", self.session_path(session_id, "reset"), body)

    def step(self, session_id: str, action: Any) -> dict:
        return self.request("POST", self.session_path(session_id, "step"), {"action": action})

    def tools(self, session_id: str) -> list:
        return self.request("GET", self.session_path(session_id, "tools"))["tools"]

    def messages(self, session_id: str) -> list[dict]:
        """The env's record of the session's episode so far (tool-use envs): every message, greeting first."""
        return self.request("GET", self.session_path(session_id, "messages"))["messages"]

    def render(self, session_id: str) -> Any:
        return self.request("GET", self.session_path(session_id, "render"))["frame"]

    def close_session(self, session_id: str) -> None:
        self.request("DELETE", self.session_path(session_id))


def _to_json(value: Any) -> Any:
    """numpy scalars and arrays (what gymnasium spaces sample) as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"Object of type {type(value).__name__} cannot be sent as JSON")


def _parse(raw: bytes) -> Any:
    text = raw.decode("utf-8", errors="replace")
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


__all__ = ["LongrunClient", "LongrunError", "DEFAULT_URL"]
