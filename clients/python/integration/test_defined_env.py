"""The adapters on an env defined with ``defineEnv``, served by a real ``longrun serve env --env MODULE``: the counter
fixture (test/fixtures/envs/counter.ts) — single-agent, tools ``add`` and ``read``, reward 2 when the counter ends on
the task's target and minus the distance otherwise. The same client code that plays retail plays it: the task list
comes from the server, the conversation is the env's own record, the reward is the module's."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from integration.helpers import vf_eval, vf_outcomes
from integration.servers import REPO_ROOT, LongrunServer
from longrun_client import LongrunClient, LongrunEnv
from longrun_client.skyrl import LongrunTextEnv
from longrun_client.tau2 import Tau2Session, agent_tools, pair_seed
from longrun_verifiers import LongrunTaskset
from longrun_verifiers import LongrunTasksetConfig as Config

ENV_ID = "fixture/counter-v0"
MODULE = REPO_ROOT / "test" / "fixtures" / "envs" / "counter.ts"


@pytest.fixture(scope="module")
def counter_server() -> Iterator[LongrunServer]:
    server = LongrunServer(["serve", "env", "--env", str(MODULE)])
    yield server
    server.stop()


class CounterModel:
    """An OpenAI-compatible chat server that solves counter tasks: ``add`` with the target the prompt names, then a
    closing text. Model ``off-by-one`` adds one less (reward −1)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"null")
                fake.requests.append(body)
                data = json.dumps(fake.answer(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def answer(body: dict) -> dict:
        messages = body["messages"]
        target = int(re.search(r"counter to (\d+)", next(m["content"] for m in messages if m["role"] == "user")).group(1))
        n = target - 1 if body.get("model") == "off-by-one" else target
        if not any(m["role"] == "tool" for m in messages):
            message: dict = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "add", "arguments": json.dumps({"n": n})}}]}
        else:
            message = {"role": "assistant", "content": f"The counter is at {n}."}
        return {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "m"), "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture(scope="module")
def counter_model() -> Iterator[CounterModel]:
    model = CounterModel()
    yield model
    model.close()


def test_server_lists_the_module_env_and_its_tasks(counter_server):
    client = LongrunClient(counter_server.url)
    assert ENV_ID in client.envs()
    assert client.tasks(ENV_ID) == {"train": ["t1", "t2", "t3"], "test": ["h4", "h7"]}
    assert client.tasks(ENV_ID, "test") == {"test": ["h4", "h7"]}


def test_tau2_session_plays_the_defined_env(counter_server):
    client = LongrunClient(counter_server.url)
    with Tau2Session(client, ENV_ID, {"split": "test"}) as s:
        s.reset(seed=3, task_id="h7")
        assert [m["role"] for m in s.messages] == ["user"] and "counter to 7" in s.messages[0]["content"]
        assert s.system_prompt.startswith("You operate a counter")
        assert [t["function"]["name"] for t in agent_tools(s.tools)] == ["add", "read"]
        step = s.step({"content": None, "toolCalls": [{"id": "c1", "name": "add", "arguments": json.dumps({"n": 5})}]})
        assert not step.done and [m["content"] for m in step.new_messages if m["role"] == "tool"] == ["5"]
        # The env's own record: the agent's turn with its parsed arguments, then the tool result.
        assert s.messages[1] == {"role": "assistant", "content": None, "toolCalls": [{"id": "c1", "name": "add", "arguments": {"n": 5}, "requestor": "assistant"}]}
        step = s.step({"content": "It is 5.", "toolCalls": None})
        assert step.done and step.terminated and step.reward == -2.0
        outcome = s.outcome()
        assert (outcome["taskId"], outcome["reward"], outcome["terminationReason"], outcome["steps"], outcome["toolErrors"]) == ("h7", -2.0, "agent_stop", 2, 0)
        assert outcome["rewardInfo"]["info"]["count"] == 5
        assert s.openai_messages()[-1] == {"role": "assistant", "content": "It is 5."}


def test_tau2_session_refuses_what_the_env_does_not_take(counter_server):
    client = LongrunClient(counter_server.url)
    with pytest.raises(ValueError, match="retail"):
        Tau2Session(client, ENV_ID, {"user": "scripted"})
    with pytest.raises(ValueError, match="keeps no conversation"):
        Tau2Session(client, "GuessNumber-v0")


def test_gymnasium_env_over_the_defined_env(counter_server):
    with LongrunEnv(ENV_ID, base_url=counter_server.url, kwargs={"split": "test"}) as env:
        obs, info = env.reset(seed=1, options={"taskId": "h4"})
        assert info["taskId"] == "h4" and "counter to 4" in obs["text"]
        obs, reward, terminated, truncated, _ = env.step({"toolCalls": [{"name": "add", "arguments": {"n": 4}}]})
        assert (obs["text"], reward, terminated, truncated) == ("tool: 4", 0.0, False, False)
        _, reward, terminated, _, info = env.step("The counter is at 4.")
        assert terminated and reward == 2.0 and info["rewardInfo"]["reward"] == 2.0


def test_skyrl_text_env_over_the_defined_env(counter_server):
    env = LongrunTextEnv(env_config={"server_url": counter_server.url, "env": ENV_ID, "split": "test"}, extras={"extra_info": {"task_id": "h4"}})
    try:
        conversation, meta = env.init([])
        assert meta == {"task_id": "h4", "seed": pair_seed(300, "h4", 0)}
        assert conversation[0]["role"] == "system" and '"name": "add"' in conversation[0]["content"]
        assert conversation[1:] == [{"role": "user", "content": "Bring the counter to 4 with add, then tell me its value."}]
        out = env.step('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
        assert not out["done"] and out["observations"] == [{"role": "tool", "content": "3"}]
        out = env.step("The counter is at 3.")
        assert out["done"] and out["reward"] == -1.0 and out["metadata"]["terminationReason"] == "agent_stop"
    finally:
        env.close()


def test_verifiers_taskset_from_server_and_vf_eval(tmp_path, counter_server, counter_model):
    tasks = list(LongrunTaskset(Config(server_url=counter_server.url, env=ENV_ID, split="test", from_server=True, trials=2, seed=5)).load())
    assert [(t.data.task_id, t.data.trial, t.data.seed) for t in tasks] == [(i, k, pair_seed(5, i, k)) for i in ("h4", "h7") for k in range(2)]
    assert all(t.data.env_kwargs == {"split": "test"} for t in tasks)
    for model, expected in [("solver", 2.0), ("off-by-one", -1.0)]:
        outcomes = vf_outcomes(vf_eval(tmp_path / model, counter_model.url, model, counter_server.url, env=ENV_ID, split="test", task_ids=["h4", "h7"], trials=1, concurrency=2))
        assert sorted(outcomes) == [("h4", 0), ("h7", 0)]
        for (task_id, trial), o in outcomes.items():
            assert o["seed"] == pair_seed(300, task_id, trial)
            assert o["reward"] == o["vf_reward"] == expected, (model, task_id, o)
            assert o["terminationReason"] == "agent_stop" and o["steps"] == 2
            assert [m["role"] for m in o["messages"]] == ["user", "assistant", "tool", "assistant"]
