"""The server's JSON spaces as Python objects: gymnasium spaces where one maps, simple descriptors otherwise."""

from __future__ import annotations

from typing import Any

try:  # gymnasium is optional
    import gymnasium as _gym
    from gymnasium import spaces as _gspaces

    _SpaceBase: Any = _gspaces.Space
except ImportError:  # pragma: no cover - depends on the machine
    _gym = None
    _gspaces = None
    _SpaceBase = object

HAS_GYMNASIUM = _gym is not None


class JsonSpace(_SpaceBase):  # type: ignore[misc,valid-type]
    """A space the server describes but gymnasium has no class for (agent turns, tool-use observations).

    ``type`` and ``spec`` hold the server's JSON description; ``contains`` checks the JSON shape only; sampling
    is not offered (ask the server's env instead)."""

    def __init__(self, spec: dict):
        self.spec = dict(spec)
        self.type = str(spec.get("type", "Unknown"))
        if HAS_GYMNASIUM:
            super().__init__(shape=None, dtype=None)

    def contains(self, x: Any) -> bool:
        if self.type == "AgentTurn":
            if isinstance(x, str):
                return x.strip() != ""
            if isinstance(x, dict):
                content, calls = x.get("content"), x.get("toolCalls")
                has_text = isinstance(content, str) and content.strip() != ""
                has_calls = isinstance(calls, list) and len(calls) > 0 and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls)
                return has_text or has_calls
            return False
        if self.type == "ToolUseObservation":
            return isinstance(x, dict) and isinstance(x.get("messages"), list) and isinstance(x.get("text"), str)
        return True

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        raise NotImplementedError(f"Sampling a {self.type} space is not supported by the client")

    @property
    def tools(self) -> list:
        """For agent-turn spaces: the tool schemas (OpenAI function format)."""
        return list(self.spec.get("tools") or [])

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonSpace) and other.spec == self.spec

    def __repr__(self) -> str:
        return f"JsonSpace({self.type})"


class DiscreteSpace:
    """Fallback for ``Discrete`` without gymnasium: integers in ``[start, start + n)``."""

    def __init__(self, n: int, start: int = 0):
        self.n, self.start = int(n), int(start)

    def contains(self, x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and self.start <= x < self.start + self.n

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def __repr__(self) -> str:
        return f"DiscreteSpace({self.n}, start={self.start})"


def space_from_json(spec: Any) -> Any:
    """``Discrete`` and ``Text`` become gymnasium spaces when gymnasium is installed; everything else a JsonSpace."""
    if not isinstance(spec, dict):
        return JsonSpace({"type": "Unknown", "raw": spec})
    kind = spec.get("type")
    if kind == "Discrete":
        if HAS_GYMNASIUM:
            return _gspaces.Discrete(int(spec["n"]), start=int(spec.get("start", 0)))
        return DiscreteSpace(int(spec["n"]), int(spec.get("start", 0)))
    if kind == "Text" and HAS_GYMNASIUM and spec.get("charset"):
        return _gspaces.Text(max_length=int(spec["maxLength"]), min_length=int(spec.get("minLength", 1)), charset=spec["charset"])
    return JsonSpace(spec)
