"""A scripted OpenAI-compatible chat server on 127.0.0.1 that plays τ² tasks from their gold actions.

It finds the task from the user's opening message (the ticket user opens with ``reason_for_call`` + ``known_info``)
and answers by how many agent turns the conversation already has: each gold action as one tool call, then a text
stating the task's ``communicate_info``, then a ``done`` call. Models (the request's ``model``):

- ``gold``: the gold trajectory (reward 1 on v0 tasks);
- ``talk-only``: no tool calls, only the closing text (reward 0 on tasks whose gold actions write to the DB).

Every request body is recorded (``requests``), so tests can compare what different adapters sent."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def opening_message(task: dict) -> str:
    ins = task["user_scenario"]["instructions"]
    if isinstance(ins, str):
        return ins
    return f"{ins['reason_for_call']} {ins['known_info']}" if ins.get("known_info") else ins["reason_for_call"]


def gold_turns(task: dict, model: str) -> list[dict]:
    """The scripted assistant messages for a task (OpenAI chat format)."""
    criteria = task.get("evaluation_criteria") or {}
    actions = [a for a in criteria.get("actions") or [] if a.get("requestor", "assistant") == "assistant"]
    info = criteria.get("communicate_info") or []
    turns: list[dict] = []
    if model == "gold":
        for i, a in enumerate(actions):
            call = {"id": f"call_g{i}", "type": "function", "function": {"name": a["name"], "arguments": json.dumps(a["arguments"])}}
            turns.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif model != "talk-only":
        raise ValueError(f"unknown fake model {model!r} (gold, talk-only)")
    text = f"Here is what I found: {'; '.join(info)}." if info else "Your request has been handled."
    turns.append({"role": "assistant", "content": text})
    turns.append({"role": "assistant", "content": None, "tool_calls": [{"id": "call_done", "type": "function", "function": {"name": "done", "arguments": "{}"}}]})
    return turns


class FakeOpenAI:
    def __init__(self, tasks: list[dict]):
        self.by_opening = {opening_message(t): t for t in tasks}
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                return None

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                status, reply = fake.answer(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path: str, body: Any) -> tuple[int, dict]:
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            return 404, {"error": {"message": f"no route {path}"}}
        if body.get("stream"):
            return 400, {"error": {"message": "streaming is not supported"}}
        with self._lock:
            self.requests.append(body)
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        task = self.by_opening.get(users[0]["content"]) if users else None
        if task is None:
            return 400, {"error": {"message": "fake model: no task opens with this user message"}}
        done_turns = sum(1 for m in messages if m.get("role") == "assistant") - 1  # minus the greeting
        script = gold_turns(task, body.get("model", "gold"))
        message = script[min(done_turns, len(script) - 1)]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
