"""A random agent on τ²-bench retail through Gymnasium: seeded tool calls and texts sampled from the env's own
action space, until the episode ends. Shows the Gymnasium API over a longrun env server.

    longrun serve env --data ../shared/tau2/retail --port 8765        # in the longrun repository
    python examples/gymnasium_random_agent.py --env-url http://127.0.0.1:8765 --episodes 3
"""

from __future__ import annotations

import argparse

import gymnasium

from longrun_client import register_gymnasium_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-url", required=True, help="the longrun env server")
    parser.add_argument("--env", default="longrun/retail-v0")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=20)
    args = parser.parse_args()
    register_gymnasium_envs(args.env_url)  # token from $LONGRUN_SERVE_TOKEN
    env = gymnasium.make(args.env, kwargs={"maxSteps": args.max_steps}, compact_info=True)
    try:
        for episode in range(args.episodes):
            env.action_space.seed(episode)
            obs, info = env.reset(seed=episode)
            steps, done, reward = 0, False, 0.0
            while not done:
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                steps += 1
                done = terminated or truncated
            print(f"episode {episode}: task {info['taskId']}, {steps} steps, {info['terminationReason']}, reward {reward}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
