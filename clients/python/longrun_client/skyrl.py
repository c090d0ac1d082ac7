"""Tool-use episodes from a longrun env server — τ²-bench retail, or any env defined with ``defineEnv`` that the server
serves — as a SkyRL text environment (``skyrl_gym``'s ``BaseTextEnv``).

SkyRL's generator renders the conversation with the policy's chat template, samples a completion and passes the
decoded text to ``env.step``; the env returns the messages to append. This env turns that text into a τ² agent
turn and plays it on the server: tool calls run against the episode's τ² DB, text goes to the server's user
simulator, and when the episode ends the reward is τ²'s (from the server's evaluator).

- ``init(prompt)`` ignores the dataset's placeholder prompt and returns the episode's real opening: a system
  message (τ²'s agent prompt, plus the tools and the tool-call format unless ``tools_in_prompt`` is False), the
  agent's greeting and the user's first message.
- Completions are read in the Hermes/Qwen tool-call format: each ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``
  block is one tool call, the text around them is the message to the user. With ``action_format="tau2"`` the text
  goes to the server unparsed instead, as a τ² gym action string (a JSON call, ``name(k='v')``, or text).
- Observations: tool results as ``{"role": "tool", "content": …}`` (``tool_result_role``), user replies as
  ``{"role": "user", "content": …}``.

Configuration comes from the ``env_config`` SkyRL passes (``environment.skyrl_gym.<env_class>`` when its config
allows one), then from the row's ``extras["extra_info"]``, then from the environment (``LONGRUN_ENV_URL``,
``LONGRUN_SERVE_TOKEN``): ``server_url``, ``token_var``, ``env`` (``longrun/retail-v0``, or any tool-use env id the
server serves), ``user``, ``split``, ``max_steps`` (200), ``max_errors`` (10) (``user``, ``max_steps`` and
``max_errors`` configure the retail envs only), ``run_seed`` (300, as ``longrun eval --seed``), ``action_format``,
``tool_result_role``, ``tools_in_prompt``. Each row names its episode in ``extra_info``: ``task_id`` and ``trial`` (the episode seed is
``pair_seed(run_seed, task_id, trial)``, as ``longrun eval``'s), or an explicit episode ``seed``.

Register with ``longrun_client.skyrl.register()`` (id ``"longrun"``) inside SkyRL's entrypoint, and build a dataset
with :func:`dataset_rows`.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from .http import LongrunClient
from .tau2 import EMPTY_REPLY_TEXT, USER_KINDS, Tau2Session, agent_tools, is_retail, pair_seed

ENV_CLASS = "longrun"
ACTION_FORMATS = ("hermes", "tau2")
TOOL_RESULT_ROLES = ("tool", "user")
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_END_MARKERS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>")

TOOLS_PROMPT = """

# Tools

You can call the functions described below, as JSON schemas inside <tools></tools>:
<tools>
{tools}
</tools>

To call a function, write a JSON object with the function's name and its arguments between <tool_call></tool_call> tags, one call per block:
<tool_call>
{{"name": "function_name", "arguments": {{"argument": "value"}}}}
</tool_call>"""

DEFAULTS: dict[str, Any] = {
    "server_url": None,
    "token_var": "LONGRUN_SERVE_TOKEN",
    "env": "longrun/retail-v0",
    "user": "ticket",
    "split": None,
    "max_steps": 200,
    "max_errors": 10,
    "run_seed": 300,
    "action_format": "hermes",
    "tool_result_role": "tool",
    "tools_in_prompt": True,
}


def _as_dict(config: Any) -> dict:
    if config is None:
        return {}
    if isinstance(config, dict):
        return dict(config)
    try:  # omegaconf DictConfig, dataclasses with to_dict
        from omegaconf import OmegaConf

        if OmegaConf.is_config(config):
            return dict(OmegaConf.to_container(config, resolve=True))  # type: ignore[arg-type]
    except ImportError:  # pragma: no cover - omegaconf comes with skyrl-gym
        pass
    if hasattr(config, "items"):
        return dict(config.items())
    raise TypeError(f"env_config must be a mapping, got {type(config).__name__}")


def parse_action(text: str, action_format: str = "hermes") -> dict | str:
    """A completion as an env action. Hermes format: ``<tool_call>`` blocks become tool calls (a block whose JSON
    cannot be read becomes a call to the empty name with the raw text as arguments, so the env answers it with a
    tool error, as τ²'s agent does with broken calls); the rest is the message to the user. A completion with
    neither becomes ``"(no response)"``. ``tau2`` format: the text itself (the server parses it)."""
    if action_format not in ACTION_FORMATS:
        raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
    if not isinstance(text, str):
        raise TypeError(f"a SkyRL action is the completion text, got {type(text).__name__}")
    for marker in _END_MARKERS:
        text = text.replace(marker, "")
    if action_format == "tau2":
        return text if text.strip() else EMPTY_REPLY_TEXT
    calls = []
    for i, block in enumerate(_TOOL_CALL.findall(text)):
        try:
            parsed = json.loads(block.strip())
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
            args = parsed.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except json.JSONDecodeError:
                    pass
            calls.append({"id": f"call_{i}", "name": parsed["name"], "arguments": args})
        else:
            calls.append({"id": f"call_{i}", "name": "", "arguments": block.strip()})
    # Text without tool calls goes to the user verbatim (as τ²'s agent sends a reply's content); around tool-call
    # blocks, the separating whitespace is dropped.
    content = (_TOOL_CALL.sub("", text).strip() if calls else text) or None
    if content is not None and not content.strip():
        content = None
    if not calls and content is None:
        return {"content": EMPTY_REPLY_TEXT, "toolCalls": None}
    return {"content": content, "toolCalls": calls or None}


def format_action(content: str | None, tool_calls: list[dict] | None) -> str:
    """The inverse of :func:`parse_action` (Hermes format): an agent turn as completion text."""
    parts = [content] if content else []
    for c in tool_calls or []:
        args = c.get("arguments", {})
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        parts.append("<tool_call>\n" + json.dumps({"name": c["name"], "arguments": args}, ensure_ascii=False) + "\n</tool_call>")
    return "\n".join(parts)


class LongrunTextEnv(BaseTextEnv):
    """One τ² episode in its own env-server session (see the module docstring for the configuration)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None):
        super().__init__()
        extras = dict(extras or {})
        info = dict(extras.get("extra_info") or {})
        given = _as_dict(env_config)
        cfg = {**DEFAULTS, **{k: v for k, v in info.items() if k in DEFAULTS}, **{k: v for k, v in given.items() if v is not None}}
        unknown = sorted(set(given) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"Unknown longrun env_config keys {unknown}; known: {sorted(DEFAULTS)}")
        if not isinstance(cfg["env"], str) or not cfg["env"].strip():
            raise ValueError(f"env must be the id of a tool-use env the server serves, got {cfg['env']!r}")
        if not is_retail(cfg["env"]):
            retail_only = sorted(k for k in ("user", "max_steps", "max_errors") if cfg[k] != DEFAULTS[k])
            if retail_only:
                raise ValueError(f"{retail_only} configure the τ² retail envs; {cfg['env']} brings its own user, turn limit and reward")
        if cfg["user"] not in USER_KINDS:
            raise ValueError(f"user must be one of {USER_KINDS}, got {cfg['user']!r}")
        if cfg["action_format"] not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {cfg['action_format']!r}")
        if cfg["tool_result_role"] not in TOOL_RESULT_ROLES:
            raise ValueError(f"tool_result_role must be one of {TOOL_RESULT_ROLES}, got {cfg['tool_result_role']!r}")
        self.config = cfg
        self.task_id: str | None = info.get("task_id")
        if self.task_id is not None and not isinstance(self.task_id, str):
            raise TypeError(f"extra_info.task_id must be a string τ² task id, got {self.task_id!r}")
        self.trial = int(info.get("trial", 0))
        if "seed" in info and info["seed"] is not None:
            self.seed = int(info["seed"])
        elif self.task_id is not None:
            self.seed = pair_seed(int(cfg["run_seed"]), self.task_id, self.trial)
        else:
            raise ValueError("extras.extra_info needs a task_id (and optionally trial) or an explicit seed")
        # SkyRL's generator sets max_turns; the server's maxSteps bounds the episode as well.
        self.max_turns = int(extras.get("max_turns") or 10**9)
        self.session: Tau2Session | None = None
        self.reward_info: dict | None = None
        self.outcome: dict | None = None

    def _client(self) -> LongrunClient:
        token = os.environ.get(self.config["token_var"]) or None
        return LongrunClient(self.config["server_url"], token=token)

    def init(self, prompt: Any = None) -> tuple[list[dict], dict[str, Any]]:
        kwargs: dict[str, Any] = {"user": self.config["user"], "maxSteps": int(self.config["max_steps"]), "maxErrors": int(self.config["max_errors"])} if is_retail(self.config["env"]) else {}
        if self.config["split"] is not None:
            kwargs["split"] = self.config["split"]
        self.close()
        self.session = Tau2Session(self._client(), self.config["env"], kwargs)
        self.session.reset(self.seed, self.task_id)
        self.turns = 0
        system = self.session.system_prompt
        if self.config["tools_in_prompt"]:
            tools = "\n".join(json.dumps(t["function"], ensure_ascii=False) for t in agent_tools(self.session.tools))
            system += TOOLS_PROMPT.format(tools=tools)
        conversation = [{"role": "system", "content": system}] + self._render(self.session.messages)
        return conversation, {"task_id": self.session.task_id, "seed": self.seed}

    def _render(self, messages: list[dict]) -> list[dict]:
        out = []
        for m in messages:
            role = m.get("role")
            if role == "tool" and m.get("requestor", "assistant") == "assistant":
                out.append({"role": self.config["tool_result_role"], "content": m["content"]})
            elif role == "user" and m.get("content") is not None:
                out.append({"role": "user", "content": m["content"]})
            elif role == "assistant":
                out.append({"role": "assistant", "content": format_action(m.get("content"), m.get("toolCalls"))})
        return out

    def step(self, action: str) -> BaseTextEnvStepOutput:
        if self.session is None:
            raise RuntimeError("call init() before step()")
        if self.session.done:
            raise RuntimeError("the episode has ended; SkyRL should not step a finished env")
        self.turns += 1
        result = self.session.step(parse_action(action, self.config["action_format"]))
        observations = self._render([m for m in result.new_messages if m.get("role") != "assistant"])
        if result.done:
            self.outcome = self.session.outcome()
            self.reward_info = self.session.reward_info
            return BaseTextEnvStepOutput(observations=[], reward=float(self.outcome["reward"]), done=True, metadata=self.outcome)
        if self.turns >= self.max_turns:
            # SkyRL's turn budget ran out before τ² ended the episode: like τ²'s max_steps, no reward.
            self.outcome = {**self.session.outcome(), "reward": 0.0, "terminationReason": "max_turns"}
            return BaseTextEnvStepOutput(observations=[], reward=0.0, done=True, metadata=self.outcome)
        return BaseTextEnvStepOutput(observations=observations, reward=0.0, done=False, metadata={"steps": result.info.get("stepCount", result.info.get("turns"))})

    def get_metrics(self) -> dict[str, Any]:
        o = self.outcome or {}
        return {"tau2_reward": o.get("reward") or 0.0, "env_steps": o.get("steps", 0), "tool_errors": o.get("toolErrors", 0), "turns": self.turns}

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def register(env_class: str = ENV_CLASS) -> None:
    """Registers :class:`LongrunTextEnv` with skyrl_gym under ``env_class`` (call it in SkyRL's entrypoint task)."""
    import skyrl_gym

    if env_class not in skyrl_gym.registry:
        skyrl_gym.register(id=env_class, entry_point="longrun_client.skyrl:LongrunTextEnv")


def dataset_rows(task_ids: list[str], trials: int = 1, env_class: str = ENV_CLASS, data_source: str = "longrun/retail-v0", config: dict[str, Any] | None = None) -> list[dict]:
    """SkyRL dataset rows for τ² tasks (``datasets.Dataset.from_list(rows).to_parquet(...)`` makes the file SkyRL reads).
    The prompt is a placeholder; the env's ``init`` supplies the real opening. ``config`` (e.g. ``{"server_url": …,
    "env": "longrun/retail-v1", "user": "scripted"}``) rides in every row's ``extra_info``, for trainers whose env
    config cannot carry custom keys; the bearer token never does (it is read from ``token_var``'s variable)."""
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    config = dict(config or {})
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"Unknown longrun env config keys {unknown}; known: {sorted(DEFAULTS)}")
    return [
        {
            "data_source": data_source,
            "prompt": [{"role": "user", "content": f"τ² task {task_id}"}],
            "env_class": env_class,
            "extra_info": {**config, "task_id": str(task_id), "trial": trial},
        }
        for task_id in task_ids
        for trial in range(trials)
    ]
