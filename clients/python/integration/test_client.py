"""The HTTP client and the τ² agent-side helpers every adapter shares."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import tomllib

import longrun_client
from longrun_client import LongrunClient, UnknownSession
from longrun_client.tau2 import EMPTY_REPLY_TEXT, Tau2Session, TurnStats, agent_tools, chat_request, pair_seed, to_openai_messages, turn_from_reply

HERE = Path(__file__).resolve().parents[1]


def test_version_is_tied_to_the_protocol():
    assert longrun_client.__version__.split(".")[0] == str(longrun_client.PROTOCOL_VERSION)
    pyproject = tomllib.loads((HERE / "pyproject.toml").read_text())
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "longrun_client._version.__version__"
    from importlib.metadata import version

    assert version("longrun-client") == longrun_client.__version__, "the installed distribution is this checkout"


def test_pair_seed_matches_longrun_eval():
    # Seeds longrun eval --seed 300 gave these (task, trial) pairs (trajectories.jsonl `seed`).
    assert pair_seed(300, "5", 0) == 1913559916
    assert pair_seed(300, "20", 0) == 2093004757
    assert pair_seed(300, "5", 1) != pair_seed(300, "5", 0)
    with pytest.raises(ValueError, match="run_seed"):
        pair_seed(-1, "5", 0)
    with pytest.raises(ValueError, match="trial"):
        pair_seed(0, "5", True)


class _Recorder(BaseHTTPRequestHandler):
    paths: list[str] = []

    def log_message(self, *args):
        return None

    def _answer(self):
        type(self).paths.append(self.path)
        body = json.dumps({"observation": None, "info": {}, "tools": [], "frame": None}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer


@pytest.fixture()
def recorder():
    _Recorder.paths = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Recorder.paths
    server.shutdown()
    server.server_close()


def test_session_ids_are_one_encoded_path_segment(recorder):
    url, paths = recorder
    client = LongrunClient(url)
    client.reset("../../envs?x=")
    client.step("a/b#c", "hi")
    client.tools("id with space")
    client.render("%2e%2e")
    client.close_session("ü")
    assert paths == [
        "/sessions/..%2F..%2Fenvs%3Fx%3D/reset",
        "/sessions/a%2Fb%23c/step",
        "/sessions/id%20with%20space/tools",
        "/sessions/%252e%252e/render",
        "/sessions/%C3%BC",
    ]
    for bad in ("", ".", "..", None):
        with pytest.raises(ValueError, match="session id"):
            client.reset(bad)  # type: ignore[arg-type]


def test_a_traversing_id_is_an_unknown_session_on_the_real_server(env_server):
    client = LongrunClient(env_server.url)
    with pytest.raises(UnknownSession) as err:
        client.reset("../../envs?x=")
    assert "../../envs?x=" in err.value.message
    with pytest.raises(UnknownSession):
        client.close_session("../sessions")


def test_to_openai_messages_renders_the_env_record():
    messages = [
        {"role": "assistant", "content": "Hi! How can I help you today?", "toolCalls": None},
        {"role": "user", "content": "Cancel #W1", "toolCalls": None},
        {"role": "assistant", "content": None, "toolCalls": [{"id": "c1", "name": "get_order_details", "arguments": {"order_id": "#W1", "n": 1.5, "ü": [1]}, "requestor": "assistant"}]},
        {"role": "tool", "id": "c1", "content": "Error: Order not found", "requestor": "assistant", "error": True},
        {"role": "tool", "id": "u1", "content": "user-side", "requestor": "user", "error": False},
        {"role": "user", "content": None, "toolCalls": None},
    ]
    out = to_openai_messages(messages, "SYS")
    assert out == [
        {"role": "system", "content": "SYS"},
        {"role": "assistant", "content": "Hi! How can I help you today?"},
        {"role": "user", "content": "Cancel #W1"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order_details", "arguments": '{"order_id":"#W1","n":1.5,"ü":[1]}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: Order not found"},
    ]
    with pytest.raises(ValueError, match="role"):
        to_openai_messages([{"role": "narrator", "content": "x"}])


def test_turn_from_reply_handles_broken_replies_like_the_ts_agent():
    stats = TurnStats()
    assert turn_from_reply({"content": "", "tool_calls": None}, stats) == {"content": EMPTY_REPLY_TEXT, "toolCalls": None}
    assert turn_from_reply({"content": "   "}, stats) == {"content": EMPTY_REPLY_TEXT, "toolCalls": None}
    assert stats.empty_replies == 2
    turn = turn_from_reply({"content": "ok", "tool_calls": [
        {"id": "", "function": {"name": "a", "arguments": "{bad"}},
        {"function": {"name": 3, "arguments": {"x": 1}}},
        {"id": "k", "function": {"name": "b", "arguments": ""}},
    ]}, stats)
    assert turn == {"content": "ok", "toolCalls": [
        {"id": "call_0", "name": "a", "arguments": "{bad"},
        {"id": "call_1", "name": "", "arguments": '{"x":1}'},
        {"id": "k", "name": "b", "arguments": "{}"},
    ]}
    assert stats.malformed_tool_calls == 1


def test_chat_request_and_tools():
    tools = [{"type": "function", "function": {"name": "x"}}, {"type": "function", "function": {"name": "done"}}]
    assert agent_tools(tools) == [{"type": "function", "function": {"name": "x"}}]
    body = chat_request([{"role": "user", "content": "hi"}], agent_tools(tools), 7, max_tokens=5)
    assert body == {"temperature": 0.0, "messages": [{"role": "user", "content": "hi"}], "seed": 7, "stream": False, "max_tokens": 5, "tools": agent_tools(tools), "tool_choice": "auto"}
    assert "tools" not in chat_request([], [], 1)


def test_tau2_session_refuses_bad_input(env_server):
    client = LongrunClient(env_server.url)
    with pytest.raises(ValueError, match="retail"):
        Tau2Session(client, "GuessNumber-v0")
    with pytest.raises(ValueError, match="user"):
        Tau2Session(client, "longrun/retail-v0", {"user": "robot"})
    with pytest.raises(ValueError, match="allMessagesAsObservation"):
        Tau2Session(client, "longrun/retail-v0", {"allMessagesAsObservation": False})
    with Tau2Session(client, "longrun/retail-v0") as s:
        s.reset(seed=1, task_id="5")
        assert [m["role"] for m in s.messages] == ["assistant", "user"]
        assert s.openai_messages()[0]["role"] == "system"
        assert len(agent_tools(s.tools)) == len(s.tools) - 1
        result = s.step({"content": "Thanks, goodbye.", "toolCalls": None})  # no question: the ticket user stops
        assert result.done and result.reward == 0.0
        assert s.outcome()["terminationReason"] == "user_stop"
        with pytest.raises(RuntimeError, match="ended"):
            s.step("more")
