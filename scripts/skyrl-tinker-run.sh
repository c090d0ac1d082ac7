#!/usr/bin/env bash
# Our Tinker client against SkyRL's Tinker server (the open engine that runs the Tinker API on one's own machines),
# on CPU, outside CI (its venv is several GB). docs/tinker.md, "SkyRL's Tinker server", records a run.
#   bash scripts/skyrl-tinker-run.sh [WORK_DIR]      (needs python3.12 on PATH, or PYTHON=/path/to/python3.12)
# It makes a venv with skyrl 0.4.0 pinned, writes a tiny random Qwen3 of our own (no model hub), starts the server,
# runs scripts/skyrl-tinker-check.ts (every seam call, checked against the loss formulas), then `longrun train` for
# two GRPO steps on a synthetic retail task set through the server and a rerun that resumes for a third step.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-$(mktemp -d)}
PYTHON=${PYTHON:-python3.12}
VENV=$WORK/venv
MODEL_DIR=$WORK/model
PORT=${PORT:-8012}
mkdir -p "$WORK"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check "skyrl[tinker,jax]==0.4.0" aiohttp uv
node --import tsx scripts/skyrl-tinker-check.ts write-model --out "$MODEL_DIR"
# SkyRL 0.4.0 starts only as the child of `uv run … -m skyrl.tinker.api` (it reads its parent's command line).
PATH=$VENV/bin:$PATH VIRTUAL_ENV=$VENV JAX_PLATFORMS=cpu "$VENV/bin/uv" run --no-project --python "$VENV/bin/python" \
  -m skyrl.tinker.api --base-model "$MODEL_DIR" --backend jax --port "$PORT" > "$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; pkill -f "skyrl.tinker" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/api/v1/healthz" >/dev/null && break; sleep 1; done
node --import tsx scripts/skyrl-tinker-check.ts check --base-url "http://127.0.0.1:$PORT" --model "$MODEL_DIR" --out "$WORK/check.json"
node bin/longrun gen tasks --seed 1 --count 4 --difficulty 1 --out "$WORK/tasks"
cat > "$WORK/run.yaml" <<YAML
task: retail-synth
retail: { tasks: { dataDir: $WORK/tasks, maxSteps: 40, tools: compact } }
policy: { type: gpt-oss, tokenizer: qwen3, format: qwen3, lr: 1.0e-4, weightDecay: 0 }
backend: { type: tinker, baseUrl: "http://127.0.0.1:$PORT", model: $MODEL_DIR, lora: { rank: 8 } }
grpo:
  data: { trainBatchSize: 2 }
  rollout: { n: 2, temperature: 1, maxTurns: 2, maxResponseTokens: 2048, maxTokensPerTurn: 12, concurrency: 4 }
  actor: { ppoMiniBatchSize: 2 }
  trainer: { totalSteps: 2, seed: 0, testFreq: 0, saveFreq: 1, checkpointDir: $WORK/grpo, metricsFile: $WORK/grpo/metrics.jsonl }
YAML
node bin/longrun train --config "$WORK/run.yaml"
node bin/longrun train --config "$WORK/run.yaml" --steps 3
echo "skyrl-tinker-run: done; the check's results are in $WORK/check.json"
