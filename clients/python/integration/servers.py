"""Starting the real longrun CLI and servers from Python tests (node + tsx from the repository)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]

TOKEN = "pytest-longrun-token"


def tau2_dir() -> Path:
    d = Path(os.environ.get("LONGRUN_TAU2_RETAIL") or REPO_ROOT.parent / "shared" / "tau2" / "retail")
    if not (d / "v0.x" / "tasks.json").is_file():
        raise RuntimeError(f"τ² retail data not found at {d} (set LONGRUN_TAU2_RETAIL to a τ²-bench data/tau2/domains/retail folder)")
    return d


def node() -> str:
    exe = shutil.which("node")
    if exe is None:
        raise RuntimeError("node is not on PATH; the Python adapter tests start the real longrun servers")
    return exe


def longrun(args: list[str], timeout: float = 300, env: dict | None = None) -> str:
    """Runs a longrun CLI command to completion; its stdout, or an error with everything it printed."""
    proc = subprocess.run([node(), "--import", "tsx", "src/cli/main.ts", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        raise RuntimeError(f"longrun {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


class LongrunServer:
    """``longrun serve …`` on a free loopback port; ``url`` once it printed its listening line."""

    def __init__(self, args: list[str], timeout: float = 120, token: str | None = None):
        """``token``: the bearer token the server requires (None: none, whatever the environment says)."""
        self.args = args
        env = {k: v for k, v in os.environ.items() if k != "LONGRUN_SERVE_TOKEN"}
        extra = ["--token", token] if token else []
        self.proc = subprocess.Popen([node(), "--import", "tsx", "src/cli/main.ts", *args, *extra, "--port", "0"], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        found = threading.Event()
        self.url = ""

        def drain() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r"listening on (http://\S+)", line)
                if m and not found.is_set():
                    self.url = m.group(1)
                    found.set()

        threading.Thread(target=drain, daemon=True).start()
        threading.Thread(target=lambda: self.proc.stdout and self.proc.stdout.read(), daemon=True).start()
        deadline = time.monotonic() + timeout
        while not found.wait(0.2):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"longrun {' '.join(args)} did not start:\n{''.join(self.log)[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)




def gold_hashes_for(data: Path) -> dict[str, str]:
    """Each τ² v0 task's DB hash after its gold actions, from ``longrun tau2 replay`` (independent of the env server)."""
    out = longrun(["tau2", "replay", "--data", str(data), "--tasks", str(data / "v0.x" / "tasks.json"), "--tool-set", "v0"])
    return {r["task_id"]: r["final_db_hash"] for r in (json.loads(line) for line in out.splitlines() if line.strip())}
