"""Tool-use episodes on a longrun env server (τ²-bench retail, or any env defined with ``defineEnv`` that the server
serves), seen from the agent's side — what every trainer adapter shares.

``longrun eval --agent openai`` runs τ²'s LLM agent: each turn it sends τ²'s system prompt, the conversation so far
in OpenAI chat format and the domain's tools (without the gym's ``done``) to an OpenAI-compatible model, and turns
the reply into an agent turn. This module reproduces that request and that reply handling exactly, so an adapter
(verifiers, skyrl-gym, your own loop) that drives the same task with the same seed and the same model sees the same
episode and gets the same reward:

- :func:`pair_seed` is ``longrun eval``'s per-(task, trial) seed.
- :func:`to_openai_messages` renders the env's messages the way ``toOpenAIMessages`` does.
- :func:`turn_from_reply` is ``OpenAIAgent.toTurn`` (broken tool calls passed on, empty replies become
  ``"(no response)"``).
- :func:`chat_request` is the request body ``OpenAIAgent`` sends.
- :class:`Tau2Session` is one env-server session in which episodes are reset and stepped; it asks the server for
  the whole message history at every step (retail: ``allMessagesAsObservation``; other tool-use envs:
  ``GET /sessions/{id}/messages``), so prompts are built from the env's own record of the conversation rather than
  from what the model emitted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from .errors import NotFound
from .http import LongrunClient

DONE_TOOL_NAME = "done"
EMPTY_REPLY_TEXT = "(no response)"
RETAIL_ENV_IDS = ("longrun/retail-v0", "longrun/retail-v1")
USER_KINDS = ("ticket", "scripted", "llm")
RETAIL_KWARGS = ("user", "maxSteps", "maxErrors", "enforceCommunicationProtocol", "allMessagesAsObservation")


def is_retail(env_id: str) -> bool:
    """Whether ``env_id`` is one of the τ² retail envs (their kwargs: ``user``, ``maxSteps``, ``maxErrors``, …)."""
    return env_id in RETAIL_ENV_IDS


def pair_seed(run_seed: int, task_id: str, trial: int) -> int:
    """The seed ``longrun eval --seed RUN_SEED`` gives the episode of (task, trial): the first four bytes of
    sha256("{run_seed}\\0{task_id}\\0{trial}"), big-endian, as a non-negative 31-bit integer."""
    if not isinstance(run_seed, int) or isinstance(run_seed, bool) or run_seed < 0:
        raise ValueError(f"run_seed must be a non-negative integer, got {run_seed!r}")
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        raise ValueError(f"trial must be a non-negative integer, got {trial!r}")
    digest = hashlib.sha256(f"{run_seed}\0{task_id}\0{trial}".encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _compact_json(value: Any) -> str:
    """``JSON.stringify(value)`` for values parsed from JSON."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def to_openai_messages(messages: list[dict], system_prompt: str | None = None) -> list[dict]:
    """The env's messages (as the server sends them: ``role``, ``content``, ``toolCalls``, tool ``id``) as OpenAI
    chat messages, optionally after a system prompt. Assistant tool calls carry their arguments as compact JSON;
    user-side tool calls and their results are not part of the agent's view and are dropped."""
    out: list[dict] = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
    for m in messages:
        role = m.get("role")
        if role == "system":
            out.append({"role": "system", "content": m.get("content")})
        elif role == "user":
            if m.get("content") is not None:
                out.append({"role": "user", "content": m["content"]})
        elif role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.get("content")}
            calls = m.get("toolCalls") or []
            if calls:
                msg["tool_calls"] = [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": _compact_json(c.get("arguments", {}))}}
                    for c in calls
                ]
            out.append(msg)
        elif role == "tool":
            if m.get("requestor", "assistant") == "assistant":
                out.append({"role": "tool", "tool_call_id": m.get("id"), "content": m.get("content")})
        else:
            raise ValueError(f"Unknown message role {role!r} in {m!r}")
    return out


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, TypeError):
        return False


@dataclass
class TurnStats:
    """Counts of broken replies, as ``OpenAIAgent.stats``."""

    malformed_tool_calls: int = 0
    empty_replies: int = 0


def turn_from_reply(message: dict | None, stats: TurnStats | None = None) -> dict:
    """A chat-completions assistant message (``content``, ``tool_calls``) as an env action
    ``{"content", "toolCalls"}``, exactly as ``OpenAIAgent.toTurn``: arguments stay strings (the env answers invalid
    JSON with a tool error), a call without a function name calls the empty name, a call without an id gets
    ``call_{i}``, and a reply with neither text nor calls becomes the text ``"(no response)"``."""
    message = message or {}
    calls = []
    for i, c in enumerate(message.get("tool_calls") or []):
        c = c if isinstance(c, dict) else {}
        fn_value = c.get("function")
        fn: dict[str, Any] = fn_value if isinstance(fn_value, dict) else {"name": "", "arguments": ""}
        raw = fn.get("arguments")
        args = raw if isinstance(raw, str) else _compact_json(raw if raw is not None else {})
        if not _is_json_object("{}" if args == "" else args) and stats is not None:
            stats.malformed_tool_calls += 1
        call_id = c.get("id")
        calls.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id != "" else f"call_{i}",
                "name": fn.get("name") if isinstance(fn.get("name"), str) else "",
                "arguments": "{}" if args == "" else args,
            }
        )
    content = message.get("content")
    content = content if isinstance(content, str) and content != "" else None
    if not calls and (content is None or content.strip() == ""):
        if stats is not None:
            stats.empty_replies += 1
        return {"content": EMPTY_REPLY_TEXT, "toolCalls": None}
    return {"content": content, "toolCalls": calls or None}


def agent_tools(tools: list[dict]) -> list[dict]:
    """The tools τ²'s agent is offered: the env's tools without the gym's ``done``, as OpenAI function tools."""
    return [{"type": "function", "function": t["function"]} for t in tools if t.get("function", {}).get("name") != DONE_TOOL_NAME]


def chat_request(messages: list[dict], tools: list[dict], seed: int, *, temperature: float = 0.0, max_tokens: int | None = None) -> dict:
    """The chat-completions body ``longrun eval``'s agent sends (without ``model``): τ²'s default temperature 0, the
    episode seed, the tools with ``tool_choice: "auto"`` when there are any, and ``max_tokens`` when capped."""
    body: dict[str, Any] = {"temperature": temperature, "messages": messages, "seed": seed, "stream": False}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    return body


@dataclass
class StepResult:
    """One env step as the adapters need it: the messages the step added, and the episode's state."""

    new_messages: list[dict]
    reward: float
    terminated: bool
    truncated: bool
    info: dict

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class Tau2Session:
    """One env-server session of a tool-use env played by an external agent: a retail env (``longrun/retail-v0`` or
    ``-v1``) or any env defined with ``defineEnv`` that the server serves (``longrun serve env --env my-env.ts``).

    ``kwargs`` are the env kwargs. Retail: ``split``, ``user``, ``maxSteps``, ``maxErrors``, with ``maxSteps``/
    ``maxErrors`` defaulting to ``longrun eval``'s 200/10. A defined env: ``split`` (its tools, user, turn limit and
    reward are the module's). ``reset`` starts an episode of ``task_id`` (or a task the env draws with ``seed`` when
    ``task_id`` is None); ``step`` plays one agent turn. ``messages`` is the env's whole record of the episode
    (greeting first), ``openai_messages()`` the agent's prompt for the next turn. An env that keeps no conversation
    (e.g. ``GuessNumber-v0``) is refused: use :class:`~longrun_client.LongrunEnv` for it."""

    client: LongrunClient
    env_id: str = "longrun/retail-v0"
    kwargs: dict = field(default_factory=dict)
    session_id: str | None = None
    messages: list[dict] = field(default_factory=list)
    system_prompt: str = ""
    tools: list[dict] = field(default_factory=list)
    task_id: str | None = None
    info: dict = field(default_factory=dict)
    done: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.env_id, str) or self.env_id == "":
            raise ValueError(f"env_id must be a non-empty string, got {self.env_id!r}")
        if not isinstance(self.kwargs, dict):
            raise TypeError(f"kwargs must be a dict of env kwargs, got {type(self.kwargs).__name__}")
        if not is_retail(self.env_id):
            retail_only = sorted(k for k in self.kwargs if k in RETAIL_KWARGS)
            if retail_only:
                raise ValueError(f"{retail_only} are kwargs of the τ² retail envs; {self.env_id} takes split (its user, turn limit and reward come from its module)")
            created = self.client.create_session(self.env_id, kwargs=dict(self.kwargs), compact_info=True)
            self.session_id = created["session_id"]
            try:
                self.client.messages(self.session_id)
            except NotFound:
                self.close()
                raise ValueError(f"Tau2Session plays tool-use envs (the τ² retail envs and envs defined with defineEnv); {self.env_id} keeps no conversation (use LongrunEnv for it)") from None
            return
        user = self.kwargs.get("user", "ticket")
        if user not in USER_KINDS:
            raise ValueError(f"kwargs['user'] must be one of {USER_KINDS}, got {user!r}")
        if "allMessagesAsObservation" in self.kwargs:
            raise ValueError("Tau2Session sets allMessagesAsObservation itself; leave it out of kwargs")
        merged = {"maxSteps": 200, "maxErrors": 10, **self.kwargs, "allMessagesAsObservation": True}
        created = self.client.create_session(self.env_id, kwargs=merged, compact_info=True)
        self.session_id = created["session_id"]

    def _history(self, observation: dict) -> list[dict]:
        """The env's whole record of the episode: the observation itself for retail (allMessagesAsObservation), the
        session's messages for other tool-use envs."""
        if is_retail(self.env_id):
            return list(observation["messages"])
        return list(self.client.messages(self._sid()))

    def reset(self, seed: int, task_id: str | None = None) -> list[dict]:
        """Starts an episode; returns the env's messages so far (greeting and the user's opening message)."""
        options = {"taskId": task_id} if task_id is not None else None
        reply = self.client.reset(self._sid(), seed=seed, options=options)
        info = reply["info"]
        self.info = info
        self.task_id = info.get("taskId")
        self.system_prompt = info.get("systemPrompt", "")
        self.tools = list(info.get("tools") or [])
        self.messages = self._history(reply["observation"])
        self.done = info.get("terminationReason") is not None
        return list(self.messages)

    def openai_messages(self) -> list[dict]:
        """The agent's next prompt: τ²'s system prompt and the conversation, in OpenAI chat format."""
        return to_openai_messages(self.messages, self.system_prompt)

    def step(self, turn: dict | str) -> StepResult:
        """Plays one agent turn (``{"content", "toolCalls"}`` or a τ² gym action string)."""
        if self.done:
            raise RuntimeError("The episode has ended; reset before stepping again")
        reply = self.client.step(self._sid(), turn)
        history = self._history(reply["observation"])
        added = history[len(self.messages):]
        self.messages = history
        self.info = reply["info"]
        terminated, truncated = bool(reply["terminated"]), bool(reply["truncated"])
        self.done = terminated or truncated
        reward = reply["reward"]
        return StepResult(added, float(reward) if reward is not None else float("nan"), terminated, truncated, self.info)

    @property
    def reward_info(self) -> dict | None:
        """The reward and its breakdown once the episode ended (retail: τ²'s ``reward``, ``dbCheck``, …; a defined
        env: ``reward`` and the reward function's ``info``), else None."""
        return self.info.get("rewardInfo")

    def outcome(self) -> dict:
        """What ``longrun eval`` records for a finished episode: reward, termination reason, steps, tool errors.
        Steps are τ²'s step count for retail, agent turns for a defined env."""
        reward_info = self.reward_info or {}
        tool_errors = self.info.get("numErrors")
        if tool_errors is None:
            tool_errors = sum(1 for m in self.messages if m.get("role") == "tool" and m.get("error"))
        return {
            "taskId": self.task_id,
            "reward": float(reward_info.get("reward", 0.0)) if self.done else None,
            "terminationReason": self.info.get("terminationReason"),
            "steps": self.info.get("stepCount", self.info.get("turns", 0)),
            "toolErrors": tool_errors,
            "rewardInfo": self.reward_info,
        }

    def close(self) -> None:
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self.client.close_session(sid)
            except Exception:  # already gone (reaped, server stopped): nothing left to close
                pass

    def _sid(self) -> str:
        if self.session_id is None:
            raise RuntimeError("This Tau2Session is closed")
        return self.session_id

    def __enter__(self) -> "Tau2Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
