"""No cross-session leakage: many episodes at once, steps interleaved, through each adapter — every episode's final
τ² DB is exactly its own task's gold DB (``longrun tau2 replay``'s hash), and an episode that writes nothing still
ends on the untouched DB while the others write around it."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import skyrl_gym

from integration.helpers import vf_eval, vf_outcomes
from longrun_client import LongrunClient
from longrun_client.skyrl import dataset_rows, format_action, register
from longrun_client.tau2 import Tau2Session, pair_seed
from tests.fake_openai import gold_turns

# Tasks whose gold actions write to the DB (so a leaked write shows in another episode's hash).
WRITE_TASKS = ["0", "1", "2", "5", "7", "11", "14", "20"]


def _server_turns(task: dict, model: str) -> list[dict]:
    return [
        {"content": m.get("content"), "toolCalls": [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]] if m.get("tool_calls") else None}
        for m in gold_turns(task, model)
    ]


def _untouched_hash(url: str, task: dict) -> str:
    with Tau2Session(LongrunClient(url), "longrun/retail-v0") as s:
        s.reset(seed=0, task_id=task["id"])
        for turn in _server_turns(task, "talk-only"):
            if s.step(turn).done:
                break
        return s.reward_info["dbCheck"]["predictedHash"]


def test_bare_client_sessions_in_lockstep(env_server, v0_tasks, v0_gold_hashes):
    url = env_server.url
    untouched = _untouched_hash(url, v0_tasks["10"])
    assert untouched not in {v0_gold_hashes[t] for t in WRITE_TASKS}
    plays = [(t, "gold") for t in WRITE_TASKS] + [(t, "talk-only") for t in WRITE_TASKS[:4]]
    barrier = threading.Barrier(len(plays))
    longest = max(len(_server_turns(v0_tasks[t], m)) for t, m in plays)

    def play(task_id: str, model: str) -> dict:
        turns = _server_turns(v0_tasks[task_id], model)
        with Tau2Session(LongrunClient(url), "longrun/retail-v0") as s:
            s.reset(seed=pair_seed(300, task_id, 0), task_id=task_id)
            for i in range(longest):
                barrier.wait(timeout=60)  # every session takes its i-th step together
                if i < len(turns) and not s.done:
                    s.step(turns[i])
            return {"task": task_id, "model": model, **s.outcome()}

    with ThreadPoolExecutor(len(plays)) as pool:
        results = list(pool.map(lambda p: play(*p), plays))
    for r in results:
        assert r["taskId"] == r["task"]
        predicted = r["rewardInfo"]["dbCheck"]["predictedHash"]
        if r["model"] == "gold":
            assert (r["reward"], predicted) == (1.0, v0_gold_hashes[r["task"]]), r["task"]
        else:
            assert (r["reward"], predicted) == (0.0, untouched), r["task"]


def test_verifiers_episodes_run_concurrently(tmp_path, env_server, fake_model, v0_gold_hashes):
    outcomes = vf_outcomes(vf_eval(tmp_path / "vf", fake_model.url, "gold", env_server.url, task_ids=WRITE_TASKS, concurrency=len(WRITE_TASKS)))
    assert sorted(t for t, _ in outcomes) == sorted(WRITE_TASKS)
    for (task_id, _), o in outcomes.items():
        assert o["vf_reward"] == 1.0
        assert o["rewardInfo"]["dbCheck"]["predictedHash"] == v0_gold_hashes[task_id]
        assert o["messages"][1]["content"] == fake_opening(fake_model, task_id)


def fake_opening(fake_model, task_id: str) -> str:
    return next(opening for opening, task in fake_model.by_opening.items() if task["id"] == task_id)


def test_skyrl_envs_in_threads(env_server, v0_tasks, v0_gold_hashes):
    register()
    rows = dataset_rows(WRITE_TASKS)
    barrier = threading.Barrier(len(rows))
    longest = max(len(gold_turns(v0_tasks[t], "gold")) for t in WRITE_TASKS)

    def play(row: dict) -> tuple[str, float, str]:
        env = skyrl_gym.make("longrun", env_config={"server_url": env_server.url}, extras={"extra_info": row["extra_info"]})
        try:
            env.init(row["prompt"])
            script = [format_action(m.get("content"), [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in m.get("tool_calls") or []])
                      for m in gold_turns(v0_tasks[row["extra_info"]["task_id"]], "gold")]
            reward = None
            for i in range(longest):
                barrier.wait(timeout=60)
                if i < len(script) and reward is None:
                    out = env.step(script[i])
                    if out["done"]:
                        reward = out["reward"]
            return row["extra_info"]["task_id"], reward, env.reward_info["dbCheck"]["predictedHash"]
        finally:
            env.close()

    with ThreadPoolExecutor(len(rows)) as pool:
        for task_id, reward, predicted in pool.map(play, rows):
            assert (reward, predicted) == (1.0, v0_gold_hashes[task_id]), task_id
