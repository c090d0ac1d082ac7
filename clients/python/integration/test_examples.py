"""The example scripts run as documented, against the test servers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_gymnasium_random_agent(env_server):
    out = run("gymnasium_random_agent.py", "--env-url", env_server.url, "--episodes", "2", "--max-steps", "6")
    lines = re.findall(r"^episode (\d): task \S+, (\d+) steps, (\w+), reward ([\d.]+)$", out, re.M)
    assert [l[0] for l in lines] == ["0", "1"], out
    assert all(1 <= int(l[1]) <= 6 for l in lines)


def test_skyrl_chat_loop(env_server, tiny_model):
    out = run("skyrl_chat_loop.py", "--env-url", env_server.url, "--model-url", f"{tiny_model.url}/v1", "--model", "tiny", "--tasks", "5,20", "--max-tokens", "8")
    assert re.findall(r"^task (5|20): \d+ turns, \w+, reward [01]\.0$", out, re.M) == ["5", "20"], out
    assert re.search(r"^mean reward [01]\.\d{3} over 2 episode\(s\)$", out, re.M), out
