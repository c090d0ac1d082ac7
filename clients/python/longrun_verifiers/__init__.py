"""Tool-use tasks from a longrun env server — τ²-bench retail, synthetic retail, or any env defined with ``defineEnv``
that the server serves (``longrun serve env --env my-env.ts``) — as a `verifiers` (v1) environment, the interface
prime-rl trains on and ``vf-eval`` evaluates with.

One package, three exports, as verifiers' loader expects (taskset id ``longrun-verifiers``):

- :class:`LongrunTaskset` — the tasks: task ids (given, read from a τ² ``tasks.json``, or listed by the server for the
  split with ``from_server``) × trials, each with ``longrun eval``'s per-(task, trial) seed; or, with no ids, an
  unbounded stream of seeds for which the server draws tasks from its split (synthetic task sets).
- :class:`LongrunEnv` — one episode = one session on the env server. The env's ``run()`` is the user's side of the
  conversation: it resets the session, sends each agent turn to the server (tool calls run on the server's τ² DB;
  text goes to the server's user simulator) and hands back what happened as the next turn's messages.
- :class:`LongrunHarness` — τ²'s LLM agent as a verifiers harness: each segment is one chat-completions call through
  verifiers' interception endpoint with τ²'s system prompt, the domain's tools as the model's tools and the
  conversation as the env recorded it — byte for byte the request ``longrun eval --agent openai`` sends.

The reward is the env's, computed by the server when the episode ends (retail: τ²'s DB check × COMMUNICATE / NL
assertions, per the task's reward basis; a defined env: its reward function, on whatever scale it returns), recorded
on the trace by the task's ``tau2_reward``.

Point it at a server with ``--env.taskset.server-url`` (default ``$LONGRUN_ENV_URL``); the bearer token is read from
the environment variable named by ``--env.taskset.token-var`` (default ``LONGRUN_SERVE_TOKEN``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import verifiers.v1 as vf
from pydantic import Field, field_validator, model_validator

from longrun_client.http import LongrunClient
from longrun_client.tau2 import USER_KINDS, Tau2Session, agent_tools, chat_request, is_retail, pair_seed, turn_from_reply

__all__ = ["LongrunEnv", "LongrunHarness", "LongrunTaskset"]

OUTCOME_KEY = "longrun"


class LongrunTaskData(vf.TaskData):
    """One episode to play: a task (or, with ``task_id`` None, whatever the env draws with ``seed``) and its seed."""

    env_id: str = "longrun/retail-v0"
    task_id: str | None = None
    trial: int = 0
    seed: int = 0
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    temperature: float = 0.0
    max_tokens: int | None = None
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The tools offered to the model; the env fills them in from the session when the episode starts."""


class LongrunTask(vf.Task[LongrunTaskData, vf.State, vf.TaskConfig]):
    @property
    def key(self) -> str:
        task = self.data.task_id if self.data.task_id is not None else f"seed{self.data.seed}"
        return f"{self.data.env_id}:{task}#{self.data.trial}"

    @vf.reward
    async def tau2_reward(self, trace: vf.Trace) -> float:
        """The env's reward for the episode (τ²'s for retail), as the longrun env server evaluated it."""
        outcome = trace.info.get(OUTCOME_KEY)
        if not outcome or outcome.get("reward") is None:
            raise ValueError("the episode did not finish on the env server, so it has no reward (see the trace's errors)")
        return float(outcome["reward"])

    @vf.metric
    async def tool_errors(self, trace: vf.Trace) -> float:
        return float((trace.info.get(OUTCOME_KEY) or {}).get("toolErrors", 0))

    @vf.metric
    async def env_steps(self, trace: vf.Trace) -> float:
        return float((trace.info.get(OUTCOME_KEY) or {}).get("steps", 0))


class LongrunTasksetConfig(vf.TasksetConfig):
    server_url: str | None = None
    """The longrun env server (`longrun serve env`); default `$LONGRUN_ENV_URL`."""
    token_var: str = "LONGRUN_SERVE_TOKEN"
    """Environment variable holding the server's bearer token (unset or empty: no token)."""
    env: str = "longrun/retail-v0"
    """Any tool-use env the server serves: `longrun/retail-v0` (DB × COMMUNICATE), `longrun/retail-v1` (NL
    assertions: the server needs a judge), or an env defined with defineEnv (`longrun serve env --env my-env.ts`)."""
    task_ids: list[str] | None = None
    """Task ids to play, in order."""
    tasks_file: str | None = None
    """A τ²-format tasks.json (τ²'s own or `longrun gen tasks` output) whose ids to play, when `task_ids` is unset.
    With neither (and no `from_server`), the taskset is unbounded: episode i plays the task the server draws with seed i."""
    from_server: bool = False
    """Play every task of `split` as the server lists it (`GET /envs/{id}/tasks`), in order."""
    trials: int = Field(1, ge=1)
    """Episodes per task, each with its own seed (`longrun eval --trials`)."""
    seed: int = Field(300, ge=0)
    """Run seed; episode seeds derive from it and (task, trial) exactly as in `longrun eval --seed`."""
    split: str | None = None
    """The env's task split (server default: `base`)."""
    user: str = "ticket"
    """Retail: the user simulator on the server: `ticket`, `scripted` (synthetic task sets) or `llm` (server started
    with one). A defined env brings its own user."""
    max_steps: int = Field(200, ge=1)
    """Retail: τ²'s step limit (a defined env has its own `maxTurns`)."""
    max_errors: int = Field(10, ge=1)
    """Retail: tool errors before the episode ends."""
    max_tokens: int | None = Field(None, ge=1)
    """Completion cap sent with every request (`longrun eval --max-tokens`); `--sampling.max-tokens` overrides it."""
    temperature: float = Field(0.0, ge=0)
    """Sampling temperature sent with every request (τ²'s default 0); `--sampling.temperature` overrides it."""

    @field_validator("env")
    @classmethod
    def _env_id(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("env must be the id of a tool-use env the server serves, got an empty string")
        return v

    @field_validator("user")
    @classmethod
    def _known_user(cls, v: str) -> str:
        if v not in USER_KINDS:
            raise ValueError(f"user must be one of {USER_KINDS}, got {v!r}")
        return v

    @model_validator(mode="after")
    def _ids_or_file(self) -> "LongrunTasksetConfig":
        if sum([self.task_ids is not None, self.tasks_file is not None, self.from_server]) > 1:
            raise ValueError("give task_ids, tasks_file or from_server, not both")
        if not is_retail(self.env):
            defaults = {"user": "ticket", "max_steps": 200, "max_errors": 10}
            retail_only = sorted(k for k, v in defaults.items() if getattr(self, k) != v)
            if retail_only:
                raise ValueError(f"{retail_only} configure the τ² retail envs; {self.env} brings its own user, turn limit and reward")
        if self.task_ids is not None and len(self.task_ids) == 0:
            raise ValueError("task_ids is empty; leave it unset to play every task of tasks_file or a seeded stream")
        return self

    def env_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"user": self.user, "maxSteps": self.max_steps, "maxErrors": self.max_errors} if is_retail(self.env) else {}
        if self.split is not None:
            kwargs["split"] = self.split
        return kwargs

    def client(self) -> LongrunClient:
        token = os.environ.get(self.token_var) or None
        return LongrunClient(self.server_url, token=token)


def _task_ids_from_file(path: str) -> list[str]:
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"tasks_file {path!r} does not exist")
    try:
        tasks = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"tasks_file {path!r} is not JSON: {e}") from None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and isinstance(t.get("id"), str) for t in tasks):
        raise ValueError(f"tasks_file {path!r} must be a JSON list of τ² tasks, each with a string id")
    return [t["id"] for t in tasks]


class LongrunTaskset(vf.Taskset[LongrunTask, LongrunTasksetConfig]):
    @property
    def INFINITE(self) -> bool:  # noqa: N802 - verifiers' attribute name
        """An unbounded seeded stream when no task ids are known (verifiers then needs -n or a bounded view)."""
        return self.config.task_ids is None and self.config.tasks_file is None and not self.config.from_server

    def load(self) -> Iterator[LongrunTask]:
        c = self.config
        ids = c.task_ids if c.task_ids is not None else _task_ids_from_file(c.tasks_file) if c.tasks_file is not None else None
        if c.from_server:
            # The split the sessions play: the one given, else the env's default (retail: base; a defined env: train).
            split = c.split if c.split is not None else ("base" if is_retail(c.env) else "train")
            ids = c.client().tasks(c.env, split)[split]
        kwargs = c.env_kwargs()
        sampling = {"temperature": c.temperature, "max_tokens": c.max_tokens}
        if ids is None:
            for i in itertools.count():
                yield LongrunTask(LongrunTaskData(name=f"seed-{i}", env_id=c.env, seed=i, env_kwargs=kwargs, **sampling), c.task)
            return
        for task_id in ids:
            for trial in range(c.trials):
                data = LongrunTaskData(
                    id=task_id, name=f"{task_id}#{trial}", env_id=c.env, task_id=task_id, trial=trial, seed=pair_seed(c.seed, task_id, trial), env_kwargs=kwargs, **sampling
                )
                yield LongrunTask(data, c.task)


class LongrunEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The agent under evaluation / training. Its harness defaults to `LongrunHarness`, which runs in-process (the
    tools run on the env server), so the runtime is a bare local subprocess box by default."""


def _wire(message: Any) -> dict:
    """A verifiers message (typed or dict) as a plain chat-completions dict with content and tool calls only."""
    if isinstance(message, dict):
        return message
    content = message.content
    if isinstance(content, list):
        raise vf.HarnessError(f"LongrunHarness sends text only; got a {message.role} message with content parts")
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    out: dict[str, Any] = {"role": message.role, "content": content}
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
    return out


class LongrunEnv(vf.Env[LongrunEnvConfig]):
    """The env server plays the world and the user; this env relays between it and the agent, one turn at a time."""

    async def run(self, task: LongrunTask, agents: vf.Agents) -> None:
        config: LongrunTasksetConfig = self.taskset.config
        d = task.data
        session = await asyncio.to_thread(Tau2Session, config.client(), d.env_id, dict(d.env_kwargs))
        try:
            await asyncio.to_thread(session.reset, d.seed, d.task_id)
            prompt = session.openai_messages()
            # The agent's view of this episode: τ²'s system prompt, the conversation so far, the domain's tools.
            view = {**d.model_dump(), "prompt": prompt[1:], "system_prompt": prompt[0]["content"], "tools": agent_tools(session.tools)}
            played = type(task)(type(d).model_validate(view), task.config)
            sent = len(prompt)
            turn_s: list[float] = []  # each agent segment (the model call through verifiers' interception)
            step_s: list[float] = []  # each env-server step
            finished_loop = False
            async with agents.agent.interaction(played) as interaction:
                try:
                    if not session.done:
                        t0 = time.perf_counter()
                        segment = await interaction.turn()
                        turn_s.append(time.perf_counter() - t0)
                        while not segment.terminated:
                            replies = [m for m in segment.messages if getattr(m, "role", None) == "assistant"]
                            if not replies:
                                raise RuntimeError("the agent's segment produced no assistant message")
                            turn = turn_from_reply(_wire(replies[-1]))
                            t0 = time.perf_counter()
                            result = await asyncio.to_thread(session.step, turn)
                            step_s.append(time.perf_counter() - t0)
                            if result.done:
                                break
                            # What the env recorded since the last prompt: the agent's turn as the env keeps it, the
                            # tool results and/or the user's reply — the next prompt is exactly the env's record.
                            history = session.openai_messages()
                            t0 = time.perf_counter()
                            segment = await interaction.turn(history[sent:])
                            turn_s.append(time.perf_counter() - t0)
                            sent = len(history)
                    finished_loop = True
                finally:
                    # What `longrun eval` records per episode, the env's own transcript included.
                    outcome = {**session.outcome(), "seed": d.seed, "trial": d.trial, "messages": session.messages, "timing": {"agentTurnS": turn_s, "envStepS": step_s}}
                    if not session.done and finished_loop:
                        # A verifiers limit (max turns or tokens, a @stop) ended the exchange before τ² did: like τ²'s
                        # max_steps, the episode scores 0. A failure (no finished loop) leaves no reward at all.
                        outcome.update(reward=0.0, terminationReason="verifiers_limit")
                    interaction.trace.info[OUTCOME_KEY] = outcome
        finally:
            await asyncio.to_thread(session.close)


class LongrunHarnessConfig(vf.HarnessConfig):
    request_timeout: float = Field(600.0, gt=0)
    """Seconds to wait for one chat completion."""


def _http_client(endpoint: str, timeout: float) -> httpx.AsyncClient:
    # A plain-http endpoint (the local interception server) needs no CA bundle; loading one costs tens of ms.
    return httpx.AsyncClient(timeout=timeout, verify=not endpoint.startswith("http://"))


class LongrunHarnessSession(vf.HarnessSession):
    """Keeps the conversation exactly as the env hands it over (the env's record, not the raw model output), and one
    HTTP client for the episode's model calls."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conversation: list[dict] = []
        self.http: httpx.AsyncClient | None = None

    async def _run(self, messages: vf.Messages | None) -> vf.ProgramResult:
        if messages is None:
            prompt = self.data.prompt
            if not isinstance(prompt, list):
                raise vf.HarnessError("LongrunHarness needs a Messages prompt (the conversation the env recorded)")
            self.conversation = [_wire(m) for m in prompt]
        else:
            self.conversation.extend(_wire(m) for m in messages)
        harness: LongrunHarness = self.harness
        if self.http is None:
            self.http = _http_client(self.endpoint, harness.config.request_timeout)
        return await harness.complete(self.ctx, self.endpoint, self.secret, self.data, self.conversation, self.http)

    async def close(self) -> None:
        http, self.http = self.http, None
        if http is not None:
            await http.aclose()
        await super().close()


class LongrunHarness(vf.Harness[LongrunHarnessConfig]):
    """τ²'s LLM agent: one chat-completions call per segment, in-process, through the interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    SUPPORTS_MCP = False
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def session(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        return LongrunHarnessSession(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url)

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        prompt = data.prompt if isinstance(data.prompt, list) else [{"role": "user", "content": data.prompt or ""}]
        async with _http_client(endpoint, self.config.request_timeout) as http:
            return await self.complete(ctx, endpoint, secret, data, [_wire(m) for m in prompt], http)

    async def complete(self, ctx: vf.ModelContext, endpoint: str, secret: str, data: vf.TaskData, conversation: list[dict], http: httpx.AsyncClient) -> vf.ProgramResult:
        if not isinstance(data, LongrunTaskData):
            data = LongrunTaskData.model_validate(data.model_dump())
        messages = ([{"role": "system", "content": data.system_prompt}] if data.system_prompt else []) + conversation
        body = {**chat_request(messages, data.tools, data.seed, temperature=data.temperature, max_tokens=data.max_tokens), "model": ctx.model}
        resp = await http.post(f"{endpoint.rstrip('/')}/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"})
        if resp.status_code >= 400:
            raise vf.HarnessError(f"chat completion failed: HTTP {resp.status_code}: {resp.text[:500]}")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

