"""The verifiers environment, run by verifiers' own evaluation (``vf-eval``), against ``longrun eval`` on the same
tasks and seeds: same rewards, same transcripts, and — through a scripted model that records what it is sent —
the same chat-completions requests."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from pydantic import ValidationError

from integration.helpers import env_view, longrun_eval, vf_eval, vf_outcomes
from longrun_verifiers import LongrunTaskset
from longrun_verifiers import LongrunTasksetConfig as Config


def _requests_by_seed(requests: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for body in requests:
        out[body["seed"]].append({k: v for k, v in body.items() if k != "model"})
    return dict(out)


@pytest.mark.parametrize("model, tasks, expected", [("gold", ["5", "20"], 1.0), ("talk-only", ["5"], 0.0)])
def test_rewards_transcripts_and_requests_equal_longrun_eval(tmp_path, env_server, data_dir, v0_tasks, fake_model, model, tasks, expected):
    fake_model.requests.clear()
    ours = longrun_eval(tmp_path / "eval", fake_model.url, model, data=data_dir, task_ids=tasks, trials=2)
    eval_requests = _requests_by_seed(fake_model.requests)
    fake_model.requests.clear()
    theirs = vf_outcomes(vf_eval(tmp_path / "vf", fake_model.url, model, env_server.url, task_ids=tasks, trials=2))
    vf_requests = _requests_by_seed(fake_model.requests)

    assert sorted(theirs) == sorted(ours) == sorted((t, k) for t in tasks for k in range(2))
    for key, ep in ours.items():
        got = theirs[key]
        assert got["seed"] == ep["seed"]
        assert got["reward"] == ep["reward"] == got["vf_reward"] == expected, key
        assert got["terminationReason"] == ep["terminationReason"]
        assert env_view(got["messages"]) == env_view(ep["messages"]), key
    assert vf_requests == eval_requests, "verifiers sent other chat requests than longrun eval's agent"
    assert len(vf_requests) == 2 * len(tasks)
    assert all(len(r) == (len(v0_tasks[t]["evaluation_criteria"]["actions"]) + 1 if model == "gold" else 1) for (t, _), r in zip(sorted(ours), [vf_requests[ours[k]["seed"]] for k in sorted(ours)]))


def test_tiny_checkpoint_through_longrun_serve_model(tmp_path, env_server, data_dir, tiny_model):
    """Greedy decoding of a random tiny-1m checkpoint: both evaluators must see the same completions, so the same
    episodes, rewards and termination reasons."""
    tasks = ["5", "20", "1", "7"]
    ours = longrun_eval(tmp_path / "eval", f"{tiny_model.url}/v1", "tiny", data=data_dir, task_ids=tasks, trials=2, max_tokens=8, max_steps=8)
    theirs = vf_outcomes(vf_eval(tmp_path / "vf", f"{tiny_model.url}/v1", "tiny", env_server.url, task_ids=tasks, trials=2, max_tokens=8, max_steps=8))
    assert sorted(theirs) == sorted(ours)
    for key, ep in ours.items():
        got = theirs[key]
        assert (got["seed"], got["reward"], got["terminationReason"], got["steps"]) == (ep["seed"], ep["reward"], ep["terminationReason"], ep["steps"]), key
        assert got["vf_reward"] == ep["reward"]
        assert env_view(got["messages"]) == env_view(ep["messages"]), key
        # The trace verifiers trains on holds the completions the env played.
        sampled = [n["message"] for n in got["nodes"] if n["sampled"]]
        played = [m for m in ep["messages"][1:] if m["role"] == "assistant"]
        assert len(sampled) == len(played)
        for s, p in zip(sampled, played):
            assert (s.get("content") or None) == p["content"] or p["content"] == "(no response)"


def test_synthetic_tasks_with_the_scripted_user(tmp_path, synth_set, synth_server, tiny_model):
    tasks_file = synth_set / "tasks.json"
    ours = longrun_eval(tmp_path / "eval", f"{tiny_model.url}/v1", "tiny", tasks_file=tasks_file, task_set="v1", user="scripted", max_tokens=8, max_steps=8)
    theirs = vf_outcomes(vf_eval(tmp_path / "vf", f"{tiny_model.url}/v1", "tiny", synth_server.url, tasks_file=tasks_file, env="longrun/retail-v1",
                                 user="scripted", split="train", max_tokens=8, max_steps=8))
    assert sorted(theirs) == sorted(ours) and len(ours) == len(json.loads(tasks_file.read_text()))
    for key, ep in ours.items():
        assert (theirs[key]["reward"], theirs[key]["terminationReason"]) == (ep["reward"], ep["terminationReason"]), key
        assert env_view(theirs[key]["messages"]) == env_view(ep["messages"]), key


def test_an_unbounded_seeded_stream_of_synthetic_tasks(tmp_path, synth_set, synth_server, tiny_model):
    ids = {t["id"] for t in json.loads((synth_set / "tasks.json").read_text())}
    episodes = vf_eval(tmp_path / "vf", f"{tiny_model.url}/v1", "tiny", synth_server.url, env="longrun/retail-v1", user="scripted", split="train",
                       max_tokens=4, max_steps=4, num_tasks=3)
    outcomes = [e["traces"][0]["info"]["longrun"] for e in episodes]
    assert len(outcomes) == 3 and all(e["ok"] for e in episodes)
    assert {o["taskId"] for o in outcomes} <= ids
    assert [o["seed"] for o in sorted(outcomes, key=lambda o: o["seed"])] == [0, 1, 2]
    assert all(o["reward"] in (0.0, 1.0) for o in outcomes)


def test_taskset_config_is_validated(tmp_path):
    with pytest.raises(ValidationError, match="env must be"):
        Config(env="")
    with pytest.raises(ValidationError, match="retail"):
        Config(env="fixture/counter-v0", user="scripted")
    with pytest.raises(ValidationError, match="user must be one of"):
        Config(user="robot")
    with pytest.raises(ValidationError, match="not both"):
        Config(task_ids=["1"], tasks_file="x.json")
    with pytest.raises(ValidationError, match="empty"):
        Config(task_ids=[])
    with pytest.raises(ValidationError):
        Config(trials=0)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(LongrunTaskset(Config(tasks_file=str(tmp_path / "missing.json"))).load())
    (tmp_path / "bad.json").write_text('{"id": 1}')
    with pytest.raises(ValueError, match="JSON list"):
        list(LongrunTaskset(Config(tasks_file=str(tmp_path / "bad.json"))).load())
    tasks = list(LongrunTaskset(Config(task_ids=["5", "20"], trials=2, seed=300)).load())
    assert [(t.data.task_id, t.data.trial, t.data.seed) for t in tasks][:2] == [("5", 0, 1913559916), ("5", 1, tasks[1].data.seed)]
    assert len({t.key for t in tasks}) == 4


def test_unreachable_server_fails_the_episode_with_a_clear_error(tmp_path, fake_model):
    episodes = vf_eval(tmp_path / "vf", fake_model.url, "gold", "http://127.0.0.1:9", task_ids=["5"])
    (episode,) = episodes
    assert not episode["ok"]
    assert "Cannot reach the longrun env server at http://127.0.0.1:9" in json.dumps(episode["errors"])


def test_a_verifiers_turn_limit_scores_zero_like_max_steps(tmp_path, env_server, fake_model):
    episodes = vf_eval(tmp_path / "vf", fake_model.url, "gold", env_server.url, task_ids=["5"], extra=["--env.agent.max-turns", "2"])
    ((key, outcome),) = vf_outcomes(episodes).items()
    assert key == ("5", 0)
    assert (outcome["terminationReason"], outcome["reward"], outcome["vf_reward"]) == ("verifiers_limit", 0.0, 0.0)
    assert len([n for n in outcome["nodes"] if n["sampled"]]) == 2
