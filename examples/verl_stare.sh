#!/usr/bin/env bash
# STARE in your own verl (0.9) run: the shipped recipe + your data and model + the method's fields.
#
#   TRAIN_FILES=~/data/math/train.parquet VAL_FILES=~/data/math/test.parquet bash examples/verl_stare.sh [overrides]
#
# The recipe (src/stare_rl/recipes/verl/stare_qwen25_math_1p5b.yaml, built from common/ and precision/) is verl's
# own ppo_trainer config with GRPO-ds settings and the stare-rl policy loss; python3 -m stare_rl.engines.verl.main
# takes exactly verl.trainer.main_ppo's command line and adds the exact STARE gate (docs/verl.md). The 7B setups
# of each paper are next to it (stare_qwen25_math_7b, steer_qwen25_math_7b, grpo_ds_* baselines; run.sh there).
# Already running verl.trainer.main_ppo with your own config? Add to it instead:
#   actor_rollout_ref.actor.policy_loss._target_=stare_rl.engines.verl.adapter.StareRLPolicyLossConfig
#   actor_rollout_ref.actor.policy_loss.loss_mode=stare  (+ the stare_* fields below, with a leading +)
# tests/engines/trl/test_trl_api.py checks that the recipe exists and that these overrides load in verl's loader.
set -euo pipefail
R="$(python3 -c 'import os, stare_rl; print(os.path.join(os.path.dirname(stare_rl.__file__), "recipes", "verl"))')"
: "${TRAIN_FILES:?set TRAIN_FILES to a verl parquet file (prompt + reward_model.ground_truth)}"
: "${VAL_FILES:?set VAL_FILES to a verl parquet file}"

# overrides:begin
stare=(
  actor_rollout_ref.actor.policy_loss.stare_variant=C2
  actor_rollout_ref.actor.policy_loss.stare_top_p_ratio=0.1
  actor_rollout_ref.actor.policy_loss.stare_target_entropy=0.3
  trainer.n_gpus_per_node=8
)
# overrides:end

python3 -m stare_rl.engines.verl.main --config-path="$R" --config-name=stare_qwen25_math_1p5b \
  data.train_files="$TRAIN_FILES" data.val_files="$VAL_FILES" \
  actor_rollout_ref.model.path="${MODEL_PATH:-Qwen/Qwen2.5-Math-1.5B}" \
  "${stare[@]}" "$@"
