"""Throughput and latency of longrun's Python trainer adapters against one env server, next to bare HTTP.

Every adapter plays τ²-bench retail v0.x gold trajectories (each gold action as one tool call, a closing text with
the task's communicate_info, then the ticket user stops) with N episodes in flight at once:

- ``http``: the bare JSON API through ``LongrunClient`` (create → reset → step… → delete; compact infos);
- ``gymnasium``: ``LongrunEnv`` (``gymnasium.Env``);
- ``tau2``: ``Tau2Session``, the layer the trainer adapters share (the whole message history on every step);
- ``skyrl``: ``LongrunTextEnv`` through ``skyrl_gym.make`` (Hermes-format completions parsed into turns);
- ``verifiers``: the verifiers environment run in-process with verifiers' own ``Env.run_slot``; its agent turns go
  through verifiers' interception server to a scripted OpenAI-compatible model that answers with the gold turns,
  so its per-turn time includes that model round trip.

Each episode must end with reward 1 and its own task's gold DB hash (``longrun tau2 replay``), so a session that saw
another's writes fails the run. Reports episodes/s and p50/p99 step latency (client side: request sent → reply
parsed); for verifiers also the agent-turn latency. The server is warmed with 32 uncounted episodes and each cell
starts with one more. Bounded: at most --episodes per cell, --max-seconds per cell.

    npm run bench:adapters [-- --concurrency 1,8,32 --episodes 64 --adapters http,gymnasium,tau2,skyrl,verifiers]

Needs the packages of clients/python/requirements-ci.txt and clients/python installed (the npm script runs
``$LONGRUN_PYTHON``, default ``python3``). Writes bench/results/adapters.{json,md}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients" / "python"
sys.path.insert(0, str(CLIENT))

try:
    import skyrl_gym
    import verifiers.v1 as vf

    from integration.servers import LongrunServer, gold_hashes_for, tau2_dir
    from longrun_client import LongrunClient, LongrunEnv
    from longrun_client.skyrl import dataset_rows, format_action, register
    from longrun_client.tau2 import Tau2Session, pair_seed
    from tests.fake_openai import FakeOpenAI, gold_turns
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.exit(f"bench:adapters needs the Python adapter packages ({e}). Install them with\n"
             "  python3 -m venv .venv && .venv/bin/pip install -r clients/python/requirements-ci.txt && .venv/bin/pip install --no-deps -e clients/python\n"
             "and run with LONGRUN_PYTHON=.venv/bin/python npm run bench:adapters")

ADAPTERS = ("http", "gymnasium", "tau2", "skyrl", "verifiers")
TOKEN = "bench-adapters-token"


def quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def server_turns(task: dict) -> list[dict]:
    return [
        {"content": m.get("content"), "toolCalls": [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]] if m.get("tool_calls") else None}
        for m in gold_turns(task, "gold")
    ]


class Timer:
    def __init__(self) -> None:
        self.steps: list[float] = []
        self.lock = threading.Lock()

    def time(self, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        dt = time.perf_counter() - t0
        with self.lock:
            self.steps.append(dt)
        return out


def play_http(url: str, task: dict, seed: int, timer: Timer) -> tuple[float, str]:
    client = LongrunClient(url, token=TOKEN)
    sid = client.create_session("longrun/retail-v0", compact_info=True)["session_id"]
    try:
        client.reset(sid, seed=seed, options={"taskId": task["id"]})
        for turn in server_turns(task):
            reply = timer.time(client.step, sid, turn)
            if reply["terminated"] or reply["truncated"]:
                info = reply["info"]["rewardInfo"]
                return info["reward"], info["dbCheck"]["predictedHash"]
        raise RuntimeError("episode did not end")
    finally:
        client.close_session(sid)


def play_gymnasium(url: str, task: dict, seed: int, timer: Timer) -> tuple[float, str]:
    with LongrunEnv("longrun/retail-v0", base_url=url, token=TOKEN, compact_info=True) as env:
        env.reset(seed=seed, options={"taskId": task["id"]})
        for turn in server_turns(task):
            _, reward, terminated, truncated, info = timer.time(env.step, turn)
            if terminated or truncated:
                return reward, info["rewardInfo"]["dbCheck"]["predictedHash"]
    raise RuntimeError("episode did not end")


def play_tau2(url: str, task: dict, seed: int, timer: Timer) -> tuple[float, str]:
    with Tau2Session(LongrunClient(url, token=TOKEN), "longrun/retail-v0") as s:
        s.reset(seed, task["id"])
        for turn in server_turns(task):
            if timer.time(s.step, turn).done:
                return s.outcome()["reward"], s.reward_info["dbCheck"]["predictedHash"]
    raise RuntimeError("episode did not end")


def play_skyrl(url: str, task: dict, seed: int, timer: Timer) -> tuple[float, str]:
    (row,) = dataset_rows([task["id"]])
    env = skyrl_gym.make("longrun", env_config={"server_url": url}, extras={"extra_info": {**row["extra_info"], "seed": seed}})
    try:
        env.init(row["prompt"])
        for m in gold_turns(task, "gold"):
            text = format_action(m.get("content"), [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in m.get("tool_calls") or []])
            out = timer.time(env.step, text)
            if out["done"]:
                return out["reward"], env.reward_info["dbCheck"]["predictedHash"]
    finally:
        env.close()
    raise RuntimeError("episode did not end")


SYNC = {"http": play_http, "gymnasium": play_gymnasium, "tau2": play_tau2, "skyrl": play_skyrl}


def run_sync(adapter: str, url: str, plan: list[tuple[dict, int]], concurrency: int, deadline: float, hashes: dict) -> dict:
    SYNC[adapter](url, plan[0][0], plan[0][1], Timer())  # warm-up episode, not counted
    timer = Timer()
    results: list[tuple[str, float, str]] = []
    lock = threading.Lock()
    it = iter(plan)

    def worker() -> None:
        while time.monotonic() < deadline:
            with lock:
                item = next(it, None)
            if item is None:
                return
            task, seed = item
            reward, predicted = SYNC[adapter](url, task, seed, timer)
            with lock:
                results.append((task["id"], reward, predicted))

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        for f in [pool.submit(worker) for _ in range(concurrency)]:
            f.result()
    wall = time.perf_counter() - t0
    return summarize(results, wall, timer.steps, None, hashes)


def run_verifiers(url: str, fake_url: str, plan: list[tuple[dict, int]], concurrency: int, max_seconds: float, hashes: dict) -> dict:
    from verifiers.v1.utils.loaders import load_environment, resolve_env_config

    ids = [task["id"] for task, _ in plan]
    config = resolve_env_config({"taskset": {"id": "longrun-verifiers", "server_url": url, "task_ids": sorted(set(ids))}})
    env = load_environment(config)
    by_id = {t.data.task_id: t for t in env.taskset}
    tasks = [by_id[i] for i in ids]
    ctx = vf.ModelContext(model="gold", client=vf.EvalClientConfig(base_url=fake_url), sampling=vf.SamplingConfig())

    async def main():
        sem = asyncio.Semaphore(concurrency)
        async with env.serving():
            await env.run_slot(env.slots(tasks[0], 1)[0], ctx, sem)  # warm-up episode, not counted
            slots = [slot for task in tasks for slot in env.slots(task, 1)]
            t0 = time.perf_counter()
            episodes = await asyncio.wait_for(asyncio.gather(*(env.run_slot(s, ctx, sem) for s in slots)), max_seconds)
            return episodes, time.perf_counter() - t0

    episodes, wall = asyncio.run(main())
    results, steps, turns = [], [], []
    for e in episodes:
        if not e.ok:
            raise RuntimeError(f"verifiers episode failed: {e.errors} {[t.errors for t in e.traces]}")
        o = e.traces[0].info["longrun"]
        results.append((o["taskId"], o["reward"], o["rewardInfo"]["dbCheck"]["predictedHash"]))
        steps += o["timing"]["envStepS"]
        turns += o["timing"]["agentTurnS"]
    return summarize(results, wall, steps, turns, hashes)


def summarize(results, wall: float, steps: list[float], turns: list[float] | None, hashes: dict) -> dict:
    bad = [(t, r) for t, r, h in results if r != 1.0 or h != hashes[t]]
    if bad:
        raise RuntimeError(f"{len(bad)} episode(s) did not end with reward 1 on their own gold DB: {bad[:5]}")
    out = {
        "episodes": len(results),
        "wallS": wall,
        "episodesPerS": len(results) / wall if wall > 0 else float("nan"),
        "steps": len(steps),
        "stepMs": {"p50": 1000 * quantile(steps, 0.5), "p99": 1000 * quantile(steps, 0.99), "mean": 1000 * statistics.fmean(steps) if steps else float("nan")},
    }
    if turns is not None:
        out["agentTurnMs"] = {"p50": 1000 * quantile(turns, 0.5), "p99": 1000 * quantile(turns, 0.99)}
    return out


def load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated episodes in flight")
    parser.add_argument("--episodes", type=int, default=64, help="episodes per (adapter, concurrency) cell")
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--max-seconds", type=float, default=120, help="stop a cell after this long")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    adapters = args.adapters.split(",")
    unknown = sorted(set(adapters) - set(ADAPTERS))
    if unknown or any(n < 1 for n in levels) or args.episodes < 1:
        parser.error(f"adapters must be among {ADAPTERS} (unknown: {unknown}); concurrency and episodes must be >= 1")

    data = tau2_dir()
    tasks = json.loads((data / "v0.x" / "tasks.json").read_text())
    hashes = gold_hashes_for(data)
    playable = tasks
    register()
    os.environ["LONGRUN_SERVE_TOKEN"] = TOKEN  # the skyrl and verifiers adapters read the token from the environment
    load_before = load()
    started = datetime.now(timezone.utc)
    server = LongrunServer(["serve", "env", "--data", str(data)], token=TOKEN)
    fake = FakeOpenAI(tasks)
    cells = []
    try:
        # Warm the server (JIT, caches) with uncounted bare-HTTP episodes, so the first cell is not penalised.
        for task in playable[:32]:
            play_http(server.url, task, 0, Timer())
        for adapter in adapters:
            for n in levels:
                plan = [(playable[i % len(playable)], pair_seed(300, playable[i % len(playable)]["id"], i // len(playable))) for i in range(args.episodes)]
                if adapter == "verifiers":
                    cell = run_verifiers(server.url, fake.url, plan, n, args.max_seconds, hashes)
                else:
                    cell = run_sync(adapter, server.url, plan, n, time.monotonic() + args.max_seconds, hashes)
                cell.update(adapter=adapter, concurrency=n)
                cells.append(cell)
                print(f"{adapter:10s} N={n:3d}: {cell['episodes']} episodes, {cell['episodesPerS']:.1f} episodes/s, step p50 {cell['stepMs']['p50']:.2f} ms, p99 {cell['stepMs']['p99']:.2f} ms", flush=True)
    finally:
        fake.close()
        server.stop()
    load_after = load()
    command = "npm run bench:adapters -- " + " ".join(sys.argv[1:])
    result = {
        "date": started.isoformat(), "python": platform.python_version(), "cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
        "loadAverageBefore": load_before, "loadAverageAfter": load_after, "command": command.strip(), "cells": cells,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "adapters.json").write_text(json.dumps(result, indent=2) + "\n")
    busy = bool(load_before) and load_before[0] > 0.5 * (os.cpu_count() or 1)
    lines = [
        "# Python adapters: episodes/s and step latency (τ²-bench retail gold trajectories)",
        "",
        f"{started.isoformat()}, Python {result['python']}, {result['cores']} cores; env server (`longrun serve env`) in its own process on 127.0.0.1, "
        f"the adapters in this one. Load average (1/5/15 min) before: {load_before}, after: {load_after}"
        + (" — **measured while other work shared the machine; treat the numbers as a lower bound**." if busy else "."),
        f"Command: `{result['command']}`.",
        "",
        "| adapter | concurrent episodes | episodes | episodes/s | step p50 (ms) | step p99 (ms) | agent turn p50 / p99 (ms) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in cells:
        turn = f"{c['agentTurnMs']['p50']:.2f} / {c['agentTurnMs']['p99']:.2f}" if "agentTurnMs" in c else "–"
        lines.append(f"| {c['adapter']} | {c['concurrency']} | {c['episodes']} | {c['episodesPerS']:.1f} | {c['stepMs']['p50']:.2f} | {c['stepMs']['p99']:.2f} | {turn} |")
    lines += [
        "",
        "Every episode ended with reward 1 and its own task's gold DB hash (no cross-session leakage). Step latency is one env "
        "step seen by the adapter (request sent → reply parsed; for `tau2`, `skyrl` and `verifiers` the reply carries the whole "
        "message history). `verifiers` runs verifiers' own rollout machinery in-process; its agent turn is one chat completion "
        "through verifiers' interception server to a scripted local model, which the other adapters do not have.",
    ]
    (out / "adapters.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'adapters.json'} and {out / 'adapters.md'}")


if __name__ == "__main__":
    main()
