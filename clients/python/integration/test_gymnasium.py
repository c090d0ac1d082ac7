"""Gymnasium's own environment checker on the client env, against the real env server: the τ² retail envs and the
toy envs, both as a plain ``LongrunEnv`` and through ``gymnasium.make`` (which adds the render and close checks)."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from longrun_client import LongrunEnv, register_gymnasium_envs

ENV_IDS = ["longrun/retail-v0", "longrun/retail-v1", "GuessNumber-v0", "ReverseText-v0"]


@pytest.fixture(scope="module", autouse=True)
def registered(env_server):
    ids = register_gymnasium_envs(env_server.url)
    assert set(ENV_IDS) <= set(ids)


def _checked(env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_on_the_client_env(env_server, env_id):
    env = LongrunEnv(env_id, base_url=env_server.url)
    try:
        assert isinstance(env, gymnasium.Env)
        messages = _checked(env)
        # The only warning: without a spec the checker cannot re-make the env in other render modes.
        assert all("not having a spec" in m for m in messages), messages
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_through_gymnasium_make(env_server, env_id):
    env = gymnasium.make(env_id)
    try:
        assert isinstance(env.unwrapped, LongrunEnv)
        assert env.unwrapped.spec is not None
        _checked(env.unwrapped)  # includes the ansi render check and the double-close check
    finally:
        env.close()


def test_seeded_sampling_and_steps_are_reproducible(env_server):
    """What the checker relies on, made explicit for a retail env: same seed, same actions, same episode."""

    def run(seed: int):
        with LongrunEnv("longrun/retail-v0", base_url=env_server.url, compact_info=True) as env:
            env.action_space.seed(seed)
            obs, info = env.reset(seed=seed)
            trace = [(obs["text"], info["taskId"])]
            for _ in range(3):
                action = env.action_space.sample()
                assert action in env.action_space
                obs, reward, terminated, truncated, _ = env.step(action)
                trace.append((obs["text"], reward, terminated, truncated))
                if terminated or truncated:
                    break
            return trace

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_vector_env_runs_sessions_side_by_side(env_server):
    envs = gymnasium.vector.SyncVectorEnv([lambda: LongrunEnv("GuessNumber-v0", base_url=env_server.url) for _ in range(3)])
    try:
        obs, _ = envs.reset(seed=[1, 2, 3])
        assert obs.shape == (3,)
        obs, rewards, terminated, truncated, _ = envs.step(np.array([0, 1, 2]))
        assert rewards.shape == (3,)
    finally:
        envs.close()
