"""Running the two evaluators the adapters are compared against: ``longrun eval`` and verifiers' ``vf-eval``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from integration.servers import longrun


def longrun_eval(out: Path, base_url: str, model: str, *, data: Path | None = None, task_ids: list[str] | None = None, tasks_file: Path | None = None,
                 task_set: str = "v0", trials: int = 1, user: str = "ticket", max_tokens: int | None = None, max_steps: int = 200, seed: int = 300,
                 concurrency: int = 1) -> dict[tuple[str, int], dict]:
    """``longrun eval --agent openai`` on the given tasks; its episodes by (task id, trial)."""
    args = ["eval", "--agent", "openai", "--base-url", base_url, "--model", model, "--task-set", task_set, "--trials", str(trials), "--user", user,
            "--max-steps", str(max_steps), "--seed", str(seed), "--concurrency", str(concurrency), "--out", str(out), "--no-progress"]
    if data is not None:
        args += ["--data", str(data)]
    if tasks_file is not None:
        args += ["--tasks", str(tasks_file)]
    if task_ids is not None:
        args += ["--task-ids", ",".join(task_ids)]
    if max_tokens is not None:
        args += ["--max-tokens", str(max_tokens)]
    longrun(args, env={"OPENAI_API_KEY": ""})
    episodes = {}
    for line in (out / "trajectories.jsonl").read_text().splitlines():
        r = json.loads(line)
        assert r["status"] == "ok", r
        episodes[(r["taskId"], r["trial"])] = r
    return episodes


def vf_eval(out: Path, base_url: str, model: str, server_url: str, *, task_ids: list[str] | None = None, tasks_file: Path | None = None, env: str = "longrun/retail-v0",
            trials: int = 1, user: str = "ticket", split: str | None = None, max_tokens: int | None = None, max_steps: int = 200, seed: int = 300,
            concurrency: int = 4, num_tasks: int | None = None, extra: list[str] | None = None) -> list[dict]:
    """verifiers' own evaluation (``vf-eval``) of the longrun taskset; its episodes (one JSON object each)."""
    vf = Path(sys.executable).with_name("vf-eval")
    args = [str(vf), "longrun-verifiers", "-m", model, "--client.base-url", base_url, "--env.taskset.server-url", server_url, "--env.taskset.env", env,
            "--env.taskset.trials", str(trials), "--env.taskset.user", user, "--env.taskset.max-steps", str(max_steps), "--env.taskset.seed", str(seed),
            "-c", str(concurrency), "--no-push", "--no-rich", "-o", str(out)]
    if task_ids is not None:
        args += ["--env.taskset.task-ids", json.dumps(task_ids)]
    if tasks_file is not None:
        args += ["--env.taskset.tasks-file", str(tasks_file)]
    if split is not None:
        args += ["--env.taskset.split", split]
    if max_tokens is not None:
        args += ["--env.taskset.max-tokens", str(max_tokens)]
    if num_tasks is not None:
        args += ["-n", str(num_tasks)]
    args += extra or []
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, env={**os.environ, "PRIME_API_KEY": ""})
    if proc.returncode != 0:
        raise RuntimeError(f"vf-eval exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    traces = list(out.glob("*/traces.jsonl"))
    assert len(traces) == 1, f"expected one run folder under {out}, found {traces}"
    return [json.loads(line) for line in traces[0].read_text().splitlines() if line.strip()]


def vf_outcomes(episodes: list[dict]) -> dict[tuple[str, int], dict]:
    """The longrun outcome of each verifiers episode by (task id, trial), with the trace's recorded τ² reward."""
    out = {}
    for e in episodes:
        assert e["ok"], f"episode failed: {e['errors']} {[t['errors'] for t in e['traces']]}"
        (trace,) = e["traces"]
        outcome = dict(trace["info"]["longrun"])
        outcome["vf_reward"] = trace["rewards"]["tau2_reward"]["score"]
        outcome["nodes"] = trace["nodes"]
        out[(outcome["taskId"], outcome["trial"])] = outcome
    return out


def env_view(messages: list[dict], *, ids: bool = True) -> list[tuple]:
    """A transcript as comparable tuples (role, content, tool calls[, ids])."""
    rows = []
    for m in messages:
        calls = tuple((c["name"], json.dumps(c["arguments"], sort_keys=True)) + ((c["id"],) if ids else ()) for c in m.get("toolCalls") or []) if m.get("toolCalls") else None
        rows.append((m["role"], m.get("content"), calls) + ((m.get("id"),) if ids and m["role"] == "tool" else ()))
    return rows
