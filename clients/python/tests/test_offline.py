"""Client pieces that need no server: error mapping and space descriptors."""

import unittest

from longrun_client import (
    BadRequest,
    InvalidAction,
    LongrunError,
    ResetNeeded,
    ServerError,
    SessionBusy,
    TooManySessions,
    Unauthorized,
    UnknownEnv,
    UnknownSession,
    space_from_json,
)
from longrun_client.errors import error_from_reply


def first_turns(space, n=40):
    space.seed(3)
    return [x for x in (space.sample() for _ in range(n)) if x.get("toolCalls")]


def body(code, message="m"):
    return {"error": {"code": code, "message": message}}


class ErrorMappingTest(unittest.TestCase):
    def test_codes_and_statuses_map_to_exceptions(self):
        cases = [
            (400, body("malformed_json"), BadRequest),
            (401, body("unauthorized"), Unauthorized),
            (404, body("unknown_env"), UnknownEnv),
            (404, body("unknown_session"), UnknownSession),
            (409, body("reset_needed"), ResetNeeded),
            (409, body("episode_over"), ResetNeeded),
            (409, body("session_busy"), SessionBusy),
            (422, body("invalid_action"), InvalidAction),
            (429, body("too_many_sessions"), TooManySessions),
            (500, body("env_error"), ServerError),
            (502, "Bad gateway", ServerError),
        ]
        for status, reply, cls in cases:
            err = error_from_reply(status, reply)
            self.assertIsInstance(err, cls, (status, reply))
            self.assertIsInstance(err, LongrunError)
            self.assertEqual(err.status, status)

    def test_message_and_code_are_kept(self):
        err = error_from_reply(404, body("unknown_session", "Unknown session 'x'"))
        self.assertEqual(err.code, "unknown_session")
        self.assertIn("Unknown session 'x'", str(err))
        self.assertIn("HTTP 404", str(err))


class SpacesTest(unittest.TestCase):
    def test_agent_turn_space(self):
        space = space_from_json({"type": "AgentTurn", "tools": [{"type": "function", "function": {"name": "done"}}]})
        self.assertTrue(space.contains("hello"))
        self.assertTrue(space.contains({"content": None, "toolCalls": [{"name": "done", "arguments": {}}]}))
        self.assertFalse(space.contains("   "))
        self.assertFalse(space.contains(42))
        self.assertFalse(space.contains({"content": None, "toolCalls": []}))
        self.assertEqual(space.tools[0]["function"]["name"], "done")
        self.assertFalse(space.contains({"content": 3, "toolCalls": None}))

    def test_tool_use_spaces_sample_seeded_members(self):
        tools = [{"type": "function", "function": {"name": "get_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["order_id", "n", "tags"]}}}]
        turn = space_from_json({"type": "AgentTurn", "tools": tools})
        obs = space_from_json({"type": "ToolUseObservation"})
        for space in (turn, obs):
            space.seed(7)
            first = [space.sample() for _ in range(20)]
            space.seed(7)
            self.assertEqual(first, [space.sample() for _ in range(20)])
            for x in first:
                self.assertIn(x, space)
        calls = [s["toolCalls"][0] for s in first_turns(turn)]
        self.assertTrue(calls, "some samples are tool calls")
        for call in calls:
            self.assertEqual(call["name"], "get_order")
            self.assertEqual(sorted(call["arguments"]), ["n", "order_id", "tags"])
            self.assertIsInstance(call["arguments"]["n"], int)
        with self.assertRaises(NotImplementedError):
            space_from_json({"type": "Mystery"}).sample()

    def test_any_charset_text(self):
        space = space_from_json({"type": "Text", "maxLength": 5, "minLength": 0, "charset": None})
        self.assertIn("", space)
        self.assertIn("中文", space)
        self.assertNotIn("toolong", space)
        space.seed(1)
        for _ in range(20):
            self.assertIn(space.sample(), space)

    def test_observation_space(self):
        space = space_from_json({"type": "ToolUseObservation"})
        self.assertIn({"messages": [], "text": ""}, space)
        self.assertNotIn({"messages": []}, space)

    def test_discrete(self):
        space = space_from_json({"type": "Discrete", "n": 3, "start": 1})
        self.assertTrue(space.contains(1))
        self.assertTrue(space.contains(3))
        self.assertFalse(space.contains(0))
        self.assertFalse(space.contains(4))


if __name__ == "__main__":
    unittest.main()
