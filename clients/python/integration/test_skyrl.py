"""The skyrl-gym text env, driven through skyrl_gym's own API (``register``, ``make``, ``init``/``step``/``close``,
``aggregate_metrics``) as SkyRL's generator drives it: rewards equal ``longrun eval``'s for the same tasks, seeds and
agent turns."""

from __future__ import annotations

import json

import pytest
import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv

from integration.helpers import env_view, longrun_eval
from longrun_client.skyrl import LongrunTextEnv, dataset_rows, format_action, parse_action, register
from tests.fake_openai import gold_turns


@pytest.fixture(scope="module", autouse=True)
def registered():
    register()
    assert "longrun" in skyrl_gym.registry


def make_env(server_url: str, row: dict, **config) -> LongrunTextEnv:
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={"server_url": server_url, **config}, extras=extras)
    assert isinstance(env, BaseTextEnv) and isinstance(env, LongrunTextEnv)
    return env


def play(env: LongrunTextEnv, row: dict, completions) -> tuple[list[dict], list[dict]]:
    """SkyRL's loop: init on the row's prompt, then one completion per turn until done. Returns the chat history and
    the step outputs."""
    history, _ = env.init(row["prompt"])
    outputs = []
    for text in completions:
        out = env.step(text)
        outputs.append(out)
        history += [{"role": "assistant", "content": text}] + out["observations"]
        if out["done"]:
            break
    return history, outputs


def completions_of(messages: list[dict]):
    """The agent's turns of a longrun eval transcript as Hermes-format completions."""
    for m in messages[1:]:  # after the greeting
        if m["role"] == "assistant":
            yield format_action(m["content"], m["toolCalls"])


@pytest.mark.parametrize("model, tasks", [("gold", ["5", "20"]), ("talk-only", ["5"])])
def test_gold_and_talk_only_turns_score_as_in_longrun_eval(tmp_path, env_server, data_dir, v0_tasks, fake_model, model, tasks):
    ours = longrun_eval(tmp_path / "eval", fake_model.url, model, data=data_dir, task_ids=tasks, trials=2)
    rows = dataset_rows(tasks, trials=2)
    metrics = []
    for row in rows:
        env = make_env(env_server.url, row)
        try:
            script = (format_action(m.get("content"), [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in m.get("tool_calls") or []])
                      for m in gold_turns(v0_tasks[row["extra_info"]["task_id"]], model))
            history, outputs = play(env, row, script)
            ep = ours[(row["extra_info"]["task_id"], row["extra_info"]["trial"])]
            assert env.seed == ep["seed"]
            assert outputs[-1]["done"] and outputs[-1]["reward"] == ep["reward"] == (1.0 if model == "gold" else 0.0)
            assert all(o["reward"] == 0.0 for o in outputs[:-1]), "the reward comes at the end, as τ²'s"
            assert env_view(env.session.messages, ids=False) == env_view(ep["messages"], ids=False)
            assert history[0]["role"] == "system" and "<tools>" in history[0]["content"]
            metrics.append(env.get_metrics())
        finally:
            env.close()
    assert LongrunTextEnv.aggregate_metrics(metrics)["tau2_reward"] == (1.0 if model == "gold" else 0.0)


def test_tiny_checkpoint_turns_replayed_score_as_in_longrun_eval(tmp_path, env_server, data_dir, tiny_model):
    """The tiny model's turns from ``longrun eval`` (served by ``longrun serve model``), replayed as completions:
    same transcript (tool call ids aside: Hermes completions carry none) and same reward."""
    tasks = ["5", "20", "1", "7"]
    ours = longrun_eval(tmp_path / "eval", f"{tiny_model.url}/v1", "tiny", data=data_dir, task_ids=tasks, trials=2, max_tokens=8, max_steps=8)
    for row in dataset_rows(tasks, trials=2):
        ep = ours[(row["extra_info"]["task_id"], row["extra_info"]["trial"])]
        env = make_env(env_server.url, row, max_steps=8)
        try:
            _, outputs = play(env, row, completions_of(ep["messages"]))
            assert outputs[-1]["done"]
            assert outputs[-1]["reward"] == ep["reward"]
            assert outputs[-1]["metadata"]["terminationReason"] == ep["terminationReason"]
            assert env_view(env.session.messages, ids=False) == env_view(ep["messages"], ids=False)
        finally:
            env.close()


def test_parse_and_format_actions():
    text = 'Let me check.\n<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W1"}}\n</tool_call><|im_end|>'
    assert parse_action(text) == {"content": "Let me check.", "toolCalls": [{"id": "call_0", "name": "get_order_details", "arguments": {"order_id": "#W1"}}]}
    assert parse_action(format_action("hi", [{"name": "a", "arguments": '{"x": [1]}'}])) == {"content": "hi", "toolCalls": [{"id": "call_0", "name": "a", "arguments": {"x": [1]}}]}
    broken = parse_action("<tool_call>{not json</tool_call>")
    assert broken == {"content": None, "toolCalls": [{"id": "call_0", "name": "", "arguments": "{not json"}]}
    assert parse_action("   <|im_end|>") == {"content": "(no response)", "toolCalls": None}
    assert parse_action("find_user_id_by_email(email='a@b.c')", "tau2") == "find_user_id_by_email(email='a@b.c')"
    with pytest.raises(ValueError, match="action_format"):
        parse_action("x", "xml")
    with pytest.raises(TypeError):
        parse_action(None)  # type: ignore[arg-type]


def test_broken_tool_calls_are_tool_errors_not_crashes(env_server):
    (row,) = dataset_rows(["5"])
    env = make_env(env_server.url, row)
    try:
        env.init(row["prompt"])
        out = env.step("<tool_call>{not json</tool_call>")
        assert not out["done"]
        assert out["observations"] == [{"role": "tool", "content": json.loads(json.dumps(out["observations"][0]["content"]))}]
        assert out["observations"][0]["content"].startswith("Error")
        out = env.step("Could you give me your zip code?")
        assert out["observations"][0]["role"] == "user"
    finally:
        env.close()


def test_turn_budget_and_config_errors(env_server):
    (row,) = dataset_rows(["5"])
    env = make_env(env_server.url, {**row, "max_turns": 1})
    try:
        env.init(row["prompt"])
        out = env.step("Could you give me your zip code?")
        assert out["done"] and out["reward"] == 0.0 and out["metadata"]["terminationReason"] == "max_turns"
    finally:
        env.close()
    for bad, match in [({"env": ""}, "env must be"), ({"env": "fixture/counter-v0", "max_steps": 5}, "retail"), ({"user": "robot"}, "user must be"), ({"colour": "red"}, "Unknown longrun env_config keys"),
                       ({"action_format": "xml"}, "action_format"), ({"tool_result_role": "system"}, "tool_result_role")]:
        with pytest.raises(ValueError, match=match):
            LongrunTextEnv(env_config={"server_url": env_server.url, **bad}, extras={"extra_info": {"task_id": "5"}})
    with pytest.raises(ValueError, match="task_id"):
        LongrunTextEnv(env_config={}, extras={"extra_info": {}})
    with pytest.raises(ValueError, match="trials"):
        dataset_rows(["5"], trials=0)
    env = LongrunTextEnv(env_config={"server_url": env_server.url}, extras={"extra_info": {"task_id": "5"}})
    with pytest.raises(RuntimeError, match="init"):
        env.step("hello")
