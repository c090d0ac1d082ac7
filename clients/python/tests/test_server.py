"""Against a running longrun env server. The Node test test/serve/python-client.test.ts starts one and sets:

LONGRUN_ENV_URL (server), LONGRUN_SERVE_TOKEN (its token), LONGRUN_TEST_GOLD (a JSON file with a task's gold turns
and gold DB hash). Without LONGRUN_ENV_URL these tests are skipped."""

import json
import os
import unittest

from longrun_client import (
    BadRequest,
    InvalidAction,
    LongrunClient,
    LongrunEnv,
    ResetNeeded,
    ServerUnreachable,
    Unauthorized,
    UnknownEnv,
    UnknownSession,
)

URL = os.environ.get("LONGRUN_ENV_URL")


@unittest.skipUnless(URL, "LONGRUN_ENV_URL is not set (run via test/serve/python-client.test.ts)")
class ServerTest(unittest.TestCase):
    def test_health_and_envs(self):
        client = LongrunClient()
        self.assertEqual(client.health()["status"], "ok")
        self.assertIn("longrun/retail-v0", client.envs())

    def test_gold_episode_reaches_reward_one(self):
        with open(os.environ["LONGRUN_TEST_GOLD"]) as f:
            gold = json.load(f)
        with LongrunEnv("longrun/retail-v0", compact_info=True) as env:
            self.assertEqual(env.action_space.type, "AgentTurn")
            self.assertEqual(len(env.tools), 16)  # the 15 v0 tools + done
            obs, info = env.reset(options={"taskId": gold["task_id"]})
            self.assertIn(obs, env.observation_space)
            self.assertEqual(obs["messages"][0]["role"], "user")
            self.assertEqual(info["taskId"], gold["task_id"])
            terminated = truncated = False
            reward = 0.0
            steps = 0
            for turn in gold["turns"]:
                self.assertIn(turn, env.action_space)
                obs, reward, terminated, truncated, info = env.step(turn)
                steps += 1
                if terminated or truncated:
                    break
            self.assertTrue(terminated)
            self.assertFalse(truncated)
            self.assertEqual(reward, 1.0)
            self.assertEqual(info["rewardInfo"]["dbCheck"]["predictedHash"], gold["gold_hash"])
            with self.assertRaises(ResetNeeded):
                env.step("anything else?")
            sid = env.session_id
        # The context manager closed the session on the server.
        with self.assertRaises(UnknownSession):
            LongrunClient().reset(sid)

    def test_string_actions_and_tool_errors(self):
        env = LongrunEnv("longrun/retail-v0", render_mode="ansi")
        try:
            env.reset(options={"taskId": "1"})
            obs, reward, terminated, truncated, info = env.step("find_user_id_by_email(email='nobody@example.com')")
            self.assertEqual(obs["text"], "tool: Error: User not found")
            self.assertEqual((reward, terminated, truncated), (0.0, False, False))
            self.assertIn("policy", info)
            frame = env.render()
            self.assertTrue(frame.startswith("assistant: Hi! How can I help you today?\nuser: "), frame[:80])
            self.assertTrue(frame.endswith("tool: Error: User not found"))
            with self.assertRaises(InvalidAction):
                env.step(42)
        finally:
            env.close()
            env.close()  # idempotent

    def test_seeded_toy_env(self):
        def run():
            with LongrunEnv("GuessNumber-v0") as env:
                obs, _ = env.reset(seed=7)
                return [obs] + [env.step(a)[:4] for a in range(3)]

        self.assertEqual(run(), run())
        with LongrunEnv("GuessNumber-v0") as env:
            self.assertTrue(env.action_space.contains(0))
            with self.assertRaises(ResetNeeded):
                env.step(0)

    def test_gymnasium_integration(self):
        from longrun_client import HAS_GYMNASIUM

        with LongrunEnv("GuessNumber-v0", seed=3) as env:
            if HAS_GYMNASIUM:
                import gymnasium
                from gymnasium.utils.env_checker import check_env

                self.assertIsInstance(env, gymnasium.Env)
                self.assertIsInstance(env.action_space, gymnasium.spaces.Discrete)
                # Gymnasium's own checker: spaces, seeded reset determinism, step results, double close.
                check_env(env, skip_render_check=True, skip_close_check=True)
                from longrun_client import register_gymnasium_envs

                self.assertIn("GuessNumber-v0", register_gymnasium_envs())
                made = gymnasium.make("GuessNumber-v0")
                try:
                    self.assertIsInstance(made.unwrapped, LongrunEnv)
                    obs, _ = made.reset(seed=2)
                    self.assertIn(obs, made.observation_space)
                    self.assertEqual(made.spec.max_episode_steps, None)
                finally:
                    made.close()
            else:
                self.assertFalse(hasattr(env, "np_random"))
                self.assertEqual(env.metadata["render_modes"], env.metadata["server"].get("renderModes", []))
            obs, info = env.reset(seed=1)
            self.assertIn(obs, env.observation_space)

    def test_errors(self):
        with self.assertRaises(UnknownEnv):
            LongrunEnv("longrun/nope-v0")
        with self.assertRaises(BadRequest):
            LongrunEnv("longrun/retail-v0", kwargs={"dataDir": "/tmp"})
        with self.assertRaises(Unauthorized):
            LongrunClient(token="wrong-token").envs()
        closed = LongrunEnv("GuessNumber-v0")
        closed.close()
        with self.assertRaises(RuntimeError):
            closed.reset()

    def test_unreachable_server(self):
        with self.assertRaises(ServerUnreachable):
            LongrunClient("http://127.0.0.1:9", timeout=2).health()


if __name__ == "__main__":
    unittest.main()
