#!/usr/bin/env bash
# The GPU check behind docs/benchmarks.md "On a GPU": on a machine with one CUDA device, from any directory.
#   bash scripts/gpu_check.sh                 # logs into gpu_check/ (or $OUT)
#   WHEELS=.whl bash scripts/gpu_check.sh     # first install the wheels in .whl (a machine without trl, offline)
# 1. the tests marked cuda (tests/test_cuda.py): the core against the CPU, the TRL trainer and `stare train` in bf16;
# 2. the loss benchmark on the GPU at 131k and 1M tokens, and at 1M with torch.compile for the selection methods;
# 3. real GRPOTrainer steps at V = 151,936 with a ~40M-parameter model: plain TRL, the adapter, STARE, STEER, 80/20;
# 4. `stare train` as a user starts it (no arguments but a shorter GRPO run: TRAIN_STEPS, default 100): the tiny
#    model's warm start in float32, then GRPO in bf16 (TRL's default on a GPU), the held-out evaluation.
# STARE_COMMIT (optional) is written into env.txt: the machine's copy of the tree has no .git.
# Each part has its own time limit, so that one hang leaves the others' logs. Exit status: the tests'.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_check}"
mkdir -p "$out"
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/stare-site \
    "$WHEELS"/*.whl || exit 1
  export PYTHONPATH="/tmp/stare-site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c 'import torch, transformers, trl, datasets; print("torch", torch.__version__, "cuda", torch.version.cuda,
"| transformers", transformers.__version__, "| trl", trl.__version__, "| datasets", datasets.__version__)'
  nproc
  echo "commit ${STARE_COMMIT:-unknown}"
} > "$out/env.txt" 2>&1
cat "$out/env.txt"

timeout 220 bash scripts/test.sh --cuda -n 4 --tb=short -rf -p no:cacheprovider > "$out/tests.log" 2>&1
tests_rc=$?
echo "tests: exit $tests_rc"; tail -25 "$out/tests.log"

for size in "64 15" "512 10"; do
  set -- $size
  timeout 60 python3 benchmarks/bench_losses.py --device cuda --batch "$1" --seq 2048 --repeats "$2" \
    > "$out/losses_b$1.txt" 2>&1
  echo "losses B=$1 T=2048: exit $?"; cat "$out/losses_b$1.txt"
done

timeout 150 python3 benchmarks/bench_losses.py --device cuda --batch 512 --seq 2048 --repeats 10 --compile \
  --variants "stare,stare (C2),high_entropy" > "$out/losses_b512_compile.txt" 2>&1
echo "losses B=512 T=2048 compiled: exit $?"; grep -v "^W1\|^  \|^$" "$out/losses_b512_compile.txt" | tail -20

# the budget (30 s under the limit) keeps a table over the repeats that finished when the machine is slow
step_timeout="${STEP_TIMEOUT:-240}"
timeout "$step_timeout" python3 benchmarks/bench_step_vocab.py --device cuda --hidden 256 --batch 32 \
  --generations 8 --completion 32 --steps 4 --warmup 1 --repeats "${STEP_REPEATS:-2}" \
  --time-budget "$((step_timeout - 30))" > "$out/step_vocab.txt" 2>&1
echo "step_vocab: exit $?"; cat "$out/step_vocab.txt"

train_dir="$(mktemp -d)"
STARE_RL_CACHE="$train_dir/cache" timeout "${TRAIN_TIMEOUT:-200}" python3 -m stare_rl.cli train \
  --output_dir "$train_dir/run" --max_steps "${TRAIN_STEPS:-100}" > "$out/train.txt" 2>&1
train_rc=$?
{ echo "exit $train_rc"; cat "$train_dir/run/eval.json" 2>/dev/null; echo; } >> "$out/train.txt"
echo "stare train (${TRAIN_STEPS:-100} GRPO steps): exit $train_rc"; tail -15 "$out/train.txt"
exit "$tests_rc"
