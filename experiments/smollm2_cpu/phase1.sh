#!/usr/bin/env bash
# Phase 1 of preregistration.md (C4 at one learning rate) for one training seed: the
# commands of its "Phase 1" block, unchanged and in its order, then the kept files. ARM
# (progressive, naive, or both, the default) runs one arm: its SFTs, its n = 5 bench, its
# greedy view, then its kept files at once, so an arm's results survive a session that
# ends before the other arm is done (checkpoints do not survive a session). Every step
# resumes when rerun (a finished SFT is not redone, a bench continues its results.jsonl).
# Run from the repository root, alone on the machine, in the background:
#
#   nohup nice -n 19 bash experiments/smollm2_cpu/phase1.sh 0 progressive >> runs/phase1_s0.log 2>&1 &
#
# Needs the "Once" block of preregistration.md run first (model, evaluation set, data).
set -euo pipefail
S=${1:?usage: phase1.sh SEED [progressive|naive|both]}
ARM=${2:-both}
case $S in 0|1|2) ;; *) echo "seed must be 0, 1 or 2, got $S" >&2; exit 2 ;; esac
case $ARM in progressive|naive|both) ;; *) echo "arm must be progressive, naive or both, got $ARM" >&2; exit 2 ;; esac
P=experiments/smollm2_cpu/configs/planned
K=docs/results/runs
test -f runs/smollm2v2/eval_tasks.jsonl || { echo "run preregistration.md's Once block first" >&2; exit 2; }

say() { echo "$(date -u +%FT%TZ) phase1 s$S: $*"; }

greedy_view() {  # the second view of one arm's last checkpoint: greedy, one answer per task
  say "greedy view of $1"
  llm4cov bench --tasks runs/smollm2v2/eval_tasks.jsonl --model local:runs/smollm2c4/$1/naive/checkpoint \
    --mode direct --samples 1 --baselines '' --temperature 0.0 --max-tokens 512 --workers 2 \
    --no-plots --out runs/smollm2c4/$1/greedy
}

keep() {  # one arm's kept files (gzipped per-answer results and train reports)
  local arm=$1 src=runs/smollm2c4/${1}_s$S
  [ $arm = progressive ] && src=${src}_stage1
  local n5=$K/smollm2c4_${arm}_s${S}_direct_n5 greedy=$K/smollm2c4_${arm}_s${S}_direct_greedy
  mkdir -p $n5 $greedy
  cp $src/naive/bench/direct/summary.json $n5/
  gzip -9c $src/naive/bench/direct/results.jsonl > $n5/results.jsonl.gz
  gzip -9c $src/naive/checkpoint/train_report.json > $n5/train_report.json.gz
  if [ $arm = progressive ]; then
    gzip -9c runs/smollm2c4/progressive_s${S}_stage0/naive/checkpoint/train_report.json \
      > $n5/stage0_train_report.json.gz
  fi
  cp $src/greedy/summary.json $greedy/
  gzip -9c $src/greedy/results.jsonl > $greedy/results.jsonl.gz
  say "kept: commit $n5 and $greedy"
}

if [ $ARM != naive ]; then
  say "progressive stage 0"; llm4cov pipeline --config $P/c4_progressive_stage0_s$S.yaml
  say "progressive stage 1 and its bench"; llm4cov pipeline --config $P/c4_progressive_stage1_s$S.yaml
  greedy_view progressive_s${S}_stage1
  keep progressive
fi
if [ $ARM != progressive ]; then
  say "naive and its bench"; llm4cov pipeline --config $P/c4_naive_s$S.yaml
  greedy_view naive_s$S
  keep naive
fi
python docs/results/learning_claims.py --write
say "done: commit $K/smollm2c4_*_s${S}_* and docs/results/learning.md"
