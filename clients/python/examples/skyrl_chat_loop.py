"""SkyRL's multi-turn loop in miniature: a skyrl-gym ``LongrunTextEnv`` on τ² retail tasks, with completions from any
OpenAI-compatible chat endpoint (SkyRL itself samples from vLLM with the policy's chat template; here the endpoint's
reply text stands in for that completion). The env's init supplies the conversation, its steps play each completion
on the env server, and the last step carries τ²'s reward.

    longrun serve env --data ../shared/tau2/retail --port 8765
    longrun serve model --checkpoint ckpt/ --chat-format harmony --port 8000     # or any OpenAI-compatible server
    python examples/skyrl_chat_loop.py --env-url http://127.0.0.1:8765 --model-url http://127.0.0.1:8000/v1 --model ckpt --tasks 5,20
"""

from __future__ import annotations

import argparse
import json
import urllib.request

import skyrl_gym

from longrun_client.skyrl import dataset_rows, register


def complete(url: str, model: str, messages: list[dict], max_tokens: int) -> str:
    body = json.dumps({"model": model, "messages": messages, "temperature": 0, "max_tokens": max_tokens}).encode()
    req = urllib.request.Request(f"{url.rstrip('/')}/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read())["choices"][0]["message"].get("content") or ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-url", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tasks", default="5,20", help="comma-separated τ² v0 task ids")
    parser.add_argument("--max-turns", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    register()
    rewards = []
    for row in dataset_rows(args.tasks.split(",")):
        env = skyrl_gym.make("longrun", env_config={"server_url": args.env_url, "max_steps": 2 * args.max_turns},
                             extras={"extra_info": row["extra_info"], "max_turns": args.max_turns})
        try:
            history, _ = env.init(row["prompt"])
            while True:
                text = complete(args.model_url, args.model, history, args.max_tokens)
                out = env.step(text)
                history += [{"role": "assistant", "content": text}] + out["observations"]
                if out["done"]:
                    break
            rewards.append(out["reward"])
            print(f"task {row['extra_info']['task_id']}: {env.turns} turns, {out['metadata']['terminationReason']}, reward {out['reward']}")
        finally:
            env.close()
    print(f"mean reward {sum(rewards) / len(rewards):.3f} over {len(rewards)} episode(s)")


if __name__ == "__main__":
    main()
