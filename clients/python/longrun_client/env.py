"""``LongrunEnv``: a Gymnasium env whose episodes run in a longrun env server session."""

from __future__ import annotations

from typing import Any

from .http import LongrunClient
from .spaces import HAS_GYMNASIUM, space_from_json

if HAS_GYMNASIUM:
    import gymnasium

    _EnvBase: Any = gymnasium.Env
else:

    class _EnvBase:  # type: ignore[no-redef]  # same surface as gymnasium.Env, for machines without gymnasium
        metadata: dict = {"render_modes": []}
        render_mode = None

        def reset(self, *, seed: int | None = None, options: dict | None = None):
            return None

        def close(self) -> None:
            return None

        @property
        def unwrapped(self):
            return self

        def __enter__(self):
            return self

        def __exit__(self, *exc: Any) -> None:
            self.close()


class LongrunEnv(_EnvBase):  # type: ignore[misc,valid-type]
    """One server session. ``env_id`` is a registered longrun env (``client.envs()`` lists them).

    ``kwargs`` are JSON env kwargs (for retail: ``split``, ``maxSteps``, ``user`` = ``"ticket"``/``"scripted"``…);
    ``seed`` seeds the first reset that brings no seed of its own; ``compact_info`` leaves the per-session
    constants (tools, policy, system prompt) out of step infos. Actions are τ² gym strings
    (``"get_user_details(user_id='x')"``, JSON tool calls, or text) or dicts ``{"content", "toolCalls"}``."""

    # Every server env renders as "ansi" (or not at all); an instance's metadata holds what its env declares.
    metadata: dict = {"render_modes": ["ansi"]}

    def __init__(
        self,
        env_id: str,
        base_url: str | None = None,
        token: str | None = None,
        kwargs: dict | None = None,
        seed: int | None = None,
        compact_info: bool = False,
        timeout: float = 60.0,
        client: LongrunClient | None = None,
        render_mode: str | None = None,
    ):
        self.client = client or LongrunClient(base_url, token=token, timeout=timeout)
        env_kwargs = dict(kwargs or {})
        if render_mode is not None:
            env_kwargs["renderMode"] = render_mode
        created = self.client.create_session(env_id, kwargs=env_kwargs, seed=seed, compact_info=compact_info)
        self.render_mode = render_mode
        self.env_id = env_id
        self.session_id: str | None = created["session_id"]
        self.action_space = space_from_json(created["action_space"])
        self.observation_space = space_from_json(created["observation_space"])
        server_meta = created.get("metadata") or {}
        self.metadata = {"render_modes": list(server_meta.get("renderModes", [])), "render_fps": server_meta.get("renderFps"), "server": server_meta}
        self.server_spec = created.get("spec") or {}
        self._tools: list | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if HAS_GYMNASIUM:
            super().reset(seed=seed)
        reply = self.client.reset(self._sid(), seed=seed, options=options)
        return reply["observation"], reply["info"]

    def step(self, action: Any):
        reply = self.client.step(self._sid(), action)
        reward = reply["reward"]
        return reply["observation"], float(reward) if reward is not None else float("nan"), bool(reply["terminated"]), bool(reply["truncated"]), reply["info"]

    def render(self):
        """The server env's frame for ``render_mode`` (``"ansi"``: the transcript as text); None without a mode."""
        if self.render_mode is None:
            return None
        return self.client.render(self._sid())

    @property
    def tools(self) -> list:
        """The tool schemas the agent may call (OpenAI function format); [] for envs without tools."""
        if self._tools is None:
            self._tools = self.client.tools(self._sid())
        return self._tools

    def close(self) -> None:
        """Closes the server session; safe to call more than once."""
        sid, self.session_id = self.session_id, None
        if sid is not None:
            try:
                self.client.close_session(sid)
            except Exception:  # already gone (reaped, server stopped): nothing left to close
                pass

    def _sid(self) -> str:
        if self.session_id is None:
            raise RuntimeError("This LongrunEnv is closed; create a new one")
        return self.session_id

    def __repr__(self) -> str:
        return f"<LongrunEnv {self.env_id} session={self.session_id}>"


def make(env_id: str, **options: Any) -> LongrunEnv:
    """Shorthand for ``LongrunEnv(env_id, **options)``."""
    return LongrunEnv(env_id, **options)


def register_gymnasium_envs(base_url: str | None = None, token: str | None = None, env_ids: list[str] | None = None) -> list[str]:
    """Registers the server's envs with gymnasium, so ``gymnasium.make("longrun/retail-v1", kwargs={...})`` opens a
    session on the server. ``env_ids`` defaults to every id the server lists. Returns the ids registered."""
    if not HAS_GYMNASIUM:
        raise RuntimeError("gymnasium is not installed (pip install gymnasium)")
    client = LongrunClient(base_url, token=token)
    ids = env_ids if env_ids is not None else client.envs()
    for env_id in ids:
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="longrun_client.env:LongrunEnv",
            kwargs={"env_id": env_id, "base_url": client.base_url, "token": client.token},
            disable_env_checker=True,
        )
    return list(ids)
