"""pytest setup for clients/python: real longrun servers started as subprocesses of this test run.

``pytest_configure`` starts one ``longrun serve env`` (τ² retail data, a bearer token, the deterministic
``communicate-fallback`` judge so retail-v1 sessions can be graded) and points the stdlib suite in ``tests/`` at it
through ``LONGRUN_ENV_URL`` / ``LONGRUN_SERVE_TOKEN`` / ``LONGRUN_TEST_GOLD``, so that suite runs here instead of
skipping. The fixtures below add a scripted OpenAI-compatible model, a tiny gpt-oss checkpoint behind
``longrun serve model``, and a synthetic task set behind its own env server.

Nothing here skips: a missing prerequisite (node, the τ² data folder, a Python package) is an error, and a skipped
test fails the run (see ``pytest_terminal_summary``).

The τ² data folder is ``$LONGRUN_TAU2_RETAIL``, else ``../shared/tau2/retail`` beside the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from integration.servers import REPO_ROOT as _ROOT  # noqa: E402
from integration.servers import TOKEN, LongrunServer, gold_hashes_for, longrun, node, tau2_dir
from tests.fake_openai import FakeOpenAI, gold_turns  # noqa: E402

assert _ROOT == REPO_ROOT

_state: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # pragma: no cover - no xdist here
        return
    data = tau2_dir()
    server = LongrunServer(["serve", "env", "--data", str(data), "--judge", "communicate-fallback"], token=TOKEN)
    _state["env_server"] = server
    tmp = Path(tempfile.mkdtemp(prefix="longrun-pytest-"))
    _state["tmp"] = tmp
    # The stdlib suite's gold episode: task 20's gold turns and its gold DB hash from `longrun tau2 replay`.
    tasks = {t["id"]: t for t in json.loads((data / "v0.x" / "tasks.json").read_text())}
    hashes = gold_hashes_for(data)
    _state["gold_hashes"] = hashes
    turns = [{"content": m.get("content"), "toolCalls": [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]] if m.get("tool_calls") else None} for m in gold_turns(tasks["20"], "gold")]
    (tmp / "gold.json").write_text(json.dumps({"task_id": "20", "turns": turns, "gold_hash": hashes["20"]}))
    os.environ["LONGRUN_ENV_URL"] = server.url
    os.environ["LONGRUN_SERVE_TOKEN"] = TOKEN
    os.environ["LONGRUN_TEST_GOLD"] = str(tmp / "gold.json")


def pytest_unconfigure(config: pytest.Config) -> None:
    server = _state.pop("env_server", None)
    if server is not None:
        server.stop()
    tmp = _state.pop("tmp", None)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    if skipped:
        terminalreporter.write_line(f"FAILED: {len(skipped)} test(s) skipped; nothing may skip here", red=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and session.exitstatus == 0:
        session.exitstatus = 1


# Fixtures ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return tau2_dir()


@pytest.fixture(scope="session")
def v0_tasks(data_dir: Path) -> dict[str, dict]:
    return {t["id"]: t for t in json.loads((data_dir / "v0.x" / "tasks.json").read_text())}


@pytest.fixture(scope="session")
def v0_gold_hashes() -> dict[str, str]:
    return _state["gold_hashes"]


@pytest.fixture(scope="session")
def env_server() -> LongrunServer:
    return _state["env_server"]


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("work")


@pytest.fixture(scope="session")
def fake_model(v0_tasks: dict[str, dict]):
    fake = FakeOpenAI(list(v0_tasks.values()))
    yield fake
    fake.close()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, data_dir: Path):
    """A random tiny-1m gpt-oss checkpoint (``longrun model init``) with a 2048-id BPE tokenizer, served by
    ``longrun serve model`` with the harmony chat format under the model name ``tiny``."""
    ckpt = tmp_path_factory.mktemp("tiny") / "ckpt"
    longrun(["model", "init", "--preset", "tiny-1m", "--seed", "1", "--out", str(ckpt)])
    config = json.loads((ckpt / "config.json").read_text())
    # τ²'s system prompt and tools are ~3k tokens with a small BPE; give the random model room for them.
    config["max_position_embeddings"] = 16384
    (ckpt / "config.json").write_text(json.dumps(config, indent=2))
    corpus = ckpt.parent / "corpus.txt"
    corpus.write_text((data_dir / "policy.md").read_text() + (data_dir / "v0.x" / "tasks.json").read_text())
    subprocess.run([node(), "--import", "tsx", str(HERE / "tests" / "support" / "make_tokenizer.ts"), str(corpus), str(config["vocab_size"]), str(ckpt / "tokenizer.json")], cwd=REPO_ROOT, check=True, capture_output=True, timeout=120)
    server = LongrunServer(["serve", "model", "--checkpoint", str(ckpt), "--chat-format", "harmony", "--model-name", "tiny"])
    yield server
    server.stop()


@pytest.fixture(scope="session")
def synth_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small synthetic retail task set (``longrun gen tasks``): its folder holds tasks.json and db.json."""
    out = tmp_path_factory.mktemp("synth") / "set"
    longrun(["gen", "tasks", "--seed", "5", "--count", "4", "--out", str(out)])
    return out


@pytest.fixture(scope="session")
def synth_server(synth_set: Path):
    server = LongrunServer(["serve", "env", "--data", str(synth_set)], token=TOKEN)
    yield server
    server.stop()
