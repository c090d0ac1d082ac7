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
        with self.assertRaises(NotImplementedError):
            space.sample()

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
