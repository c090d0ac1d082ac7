"""The server's JSON spaces as Python objects: gymnasium spaces where one maps, simple descriptors otherwise."""

from __future__ import annotations

from typing import Any

try:  # gymnasium is optional
    import gymnasium as _gym
    from gymnasium import spaces as _gspaces

    _SpaceBase: Any = _gspaces.Space
except ImportError:  # pragma: no cover - depends on the machine
    _gym = None  # type: ignore[assignment]
    _gspaces = None  # type: ignore[assignment]
    _SpaceBase = object

HAS_GYMNASIUM = _gym is not None


_PRINTABLE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,?!'-_@#"
_ANY_CHARS = _PRINTABLE + "äöüßéñ中文字🙂🚀"


def _is_tool_call(c: Any) -> bool:
    return isinstance(c, dict) and isinstance(c.get("name"), str)


def _is_message(m: Any) -> bool:
    """The server's message shapes (``ToolUseObservationSpace.contains`` in src/tooluse/spaces.ts)."""
    if not isinstance(m, dict):
        return False
    role = m.get("role")
    if role == "system":
        return isinstance(m.get("content"), str)
    if role in ("assistant", "user"):
        calls = m.get("toolCalls")
        return (m.get("content") is None or isinstance(m.get("content"), str)) and (calls is None or (isinstance(calls, list) and all(_is_tool_call(c) for c in calls)))
    if role == "tool":
        return isinstance(m.get("id"), str) and isinstance(m.get("content"), str) and isinstance(m.get("error"), bool) and m.get("requestor") in ("assistant", "user")
    return False


class JsonSpace(_SpaceBase):  # type: ignore[misc,valid-type]
    """A space the server describes but gymnasium has no class for (agent turns, tool-use observations).

    ``type`` and ``spec`` hold the server's JSON description; ``contains`` checks the JSON shape as the server does.
    ``AgentTurn`` and ``ToolUseObservation`` spaces sample seeded values (as the server's spaces do: half text
    turns, half tool calls with arguments drawn from the tool's JSON schema) — enough for checkers and random
    agents, not a model of real traffic. Other kinds cannot be sampled."""

    def __init__(self, spec: dict, seed: int | None = None):
        self.spec = dict(spec)
        self.type = str(spec.get("type", "Unknown"))
        self._rng: Any = None
        if HAS_GYMNASIUM:
            super().__init__(shape=None, dtype=None, seed=seed)
        elif seed is not None:
            self.seed(seed)

    # Seeding without gymnasium: a stdlib RNG with the same surface we use (random(), integers()).
    def seed(self, seed: int | None = None) -> Any:
        if HAS_GYMNASIUM:
            return super().seed(seed)
        import random

        self._rng = random.Random(seed)
        return [seed]

    def _random(self) -> float:
        if HAS_GYMNASIUM:
            return float(self.np_random.random())
        if self._rng is None:
            self.seed(None)
        rng = self._rng
        assert rng is not None
        return float(rng.random())

    def _int(self, low: int, high: int) -> int:
        """Uniform integer in [low, high)."""
        return low + min(int(self._random() * (high - low)), high - low - 1)

    def _text(self, max_len: int) -> str:
        n = self._int(1, max_len + 1)
        text = "".join(_PRINTABLE[self._int(0, len(_PRINTABLE))] for _ in range(n))
        return text if text.strip() else "x" + text[1:]

    def _value(self, schema: Any, depth: int = 0) -> Any:
        schema = schema if isinstance(schema, dict) else {}
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return schema["enum"][self._int(0, len(schema["enum"]))]
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = kind[self._int(0, len(kind))] if kind else None
        if kind == "integer":
            return self._int(0, 1000)
        if kind == "number":
            return round(self._random() * 1000, 2)
        if kind == "boolean":
            return self._random() < 0.5
        if kind == "array":
            return [self._value(schema.get("items"), depth + 1) for _ in range(self._int(0, 3) if depth < 3 else 0)]
        if kind == "object" or "properties" in schema:
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            required = schema.get("required") if isinstance(schema.get("required"), list) else list(props)
            return {k: self._value(props.get(k), depth + 1) for k in required if depth < 3}
        if kind == "null":
            return None
        return self._text(12)

    def contains(self, x: Any) -> bool:
        if self.type == "AgentTurn":
            if isinstance(x, str):
                return x.strip() != ""
            if isinstance(x, dict):
                content, calls = x.get("content"), x.get("toolCalls")
                if content is not None and not isinstance(content, str):
                    return False
                if calls is not None and not (isinstance(calls, list) and all(_is_tool_call(c) for c in calls)):
                    return False
                return (isinstance(content, str) and content.strip() != "") or (isinstance(calls, list) and len(calls) > 0)
            return False
        if self.type == "Text":  # a Text space whose charset is "any" (gymnasium's Text needs a charset)
            return isinstance(x, str) and int(self.spec.get("minLength", 1)) <= len(x) <= int(self.spec["maxLength"])
        if self.type == "ToolUseObservation":
            return isinstance(x, dict) and isinstance(x.get("messages"), list) and all(_is_message(m) for m in x["messages"]) and isinstance(x.get("text"), str)
        return True

    def __contains__(self, x: Any) -> bool:
        return self.contains(x)

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        if mask is not None or probability is not None:
            raise ValueError(f"Sampling a {self.type} space with a mask or probabilities is not supported")
        if self.type == "AgentTurn":
            tools = [t for t in self.tools if isinstance(t, dict) and isinstance(t.get("function"), dict)]
            if not tools or self._random() < 0.5:
                return {"content": self._text(64), "toolCalls": None}
            fn = tools[self._int(0, len(tools))]["function"]
            return {"content": None, "toolCalls": [{"name": fn["name"], "arguments": self._value(fn.get("parameters") or {"type": "object"})}]}
        if self.type == "Text":
            low, high = int(self.spec.get("minLength", 1)), int(self.spec["maxLength"])
            return "".join(_ANY_CHARS[self._int(0, len(_ANY_CHARS))] for _ in range(self._int(low, high + 1)))
        if self.type == "ToolUseObservation":
            content = self._text(32)
            if self._random() < 0.5:
                messages: list[dict] = [{"role": "user", "content": content, "toolCalls": None}]
                return {"messages": messages, "text": f"user: {content}"}
            messages = [{"role": "tool", "id": f"call_{self._int(0, 1000)}", "content": content, "requestor": "assistant", "error": self._random() < 0.5}]
            return {"messages": messages, "text": f"tool: {content}"}
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

    def __hash__(self) -> int:
        return hash(self.type)

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
    """``Discrete`` and ``Text`` (with an explicit charset) become gymnasium spaces when gymnasium is installed;
    everything else a JsonSpace."""
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
