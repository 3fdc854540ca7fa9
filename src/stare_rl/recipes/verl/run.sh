#!/usr/bin/env bash
# Launch a stare-rl verl recipe:  bash run.sh <recipe> [extra hydra overrides]
#   recipes: grpo_ds_* stare_* (STARE's setup), grpo_* steer_* steer_linear_* (STEER's setup); see *.yaml
#            retool/stare_retool_qwen25_7b (multi-turn tool use with a sandboxed code interpreter)
#   env: TRAIN_FILES, VAL_FILES (verl parquet with prompt + reward_model.ground_truth), MODEL_PATH (optional)
# STARE/STEER go through python -m stare_rl.engines.verl.main (exact gate, entropy in the loss; their
# recipes set trainer.v1.trainer_mode=stare_rl, which only that entry point registers in Ray's process);
# the GRPO and GRPO-ds baselines through verl's own python -m verl.trainer.main_ppo. Same config tree either way.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
recipe="${1:?usage: bash run.sh <recipe> [hydra overrides]}"
shift
[ -f "$here/$recipe.yaml" ] || { echo "no recipe $here/$recipe.yaml" >&2; exit 2; }
case "$recipe" in
  grpo_*) entry=(python3 -m verl.trainer.main_ppo) ;;
  *) entry=(python3 -m stare_rl.engines.verl.main) ;;
esac
overrides=()
[ -n "${TRAIN_FILES:-}" ] && overrides+=("data.train_files=$TRAIN_FILES")
[ -n "${VAL_FILES:-}" ] && overrides+=("data.val_files=$VAL_FILES")
[ -n "${MODEL_PATH:-}" ] && overrides+=("actor_rollout_ref.model.path=$MODEL_PATH")
case "$recipe" in  # tool-use recipes: the sandboxed code interpreter shipped next to them
  retool/*) overrides+=("actor_rollout_ref.rollout.multi_turn.function_tool_path=$here/retool/code_tool.py") ;;
esac
exec "${entry[@]}" --config-path="$here" --config-name="$recipe" "${overrides[@]}" "$@"
