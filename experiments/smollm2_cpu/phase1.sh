#!/usr/bin/env bash
# Phase 1 of preregistration.md (C4 at one learning rate) for one training seed: the
# commands of its "Phase 1" block, unchanged and in its order, then the kept files. Every
# step resumes when rerun (a finished SFT is not redone, a bench continues its
# results.jsonl). Run from the repository root, alone on the machine, in the background:
#
#   nohup nice -n 19 bash experiments/smollm2_cpu/phase1.sh 0 >> runs/phase1_s0.log 2>&1 &
#
# Needs the "Once" block of preregistration.md run first (model, evaluation set, data).
set -euo pipefail
S=${1:?usage: phase1.sh SEED (0, 1 or 2)}
case $S in 0|1|2) ;; *) echo "seed must be 0, 1 or 2, got $S" >&2; exit 2 ;; esac
P=experiments/smollm2_cpu/configs/planned
K=docs/results/runs
test -f runs/smollm2v2/eval_tasks.jsonl || { echo "run preregistration.md's Once block first" >&2; exit 2; }

say() { echo "$(date -u +%FT%TZ) phase1 s$S: $*"; }

say "progressive stage 0"; llm4cov pipeline --config $P/c4_progressive_stage0_s$S.yaml
say "progressive stage 1 and its bench"; llm4cov pipeline --config $P/c4_progressive_stage1_s$S.yaml
say "naive and its bench"; llm4cov pipeline --config $P/c4_naive_s$S.yaml
for arm in progressive_s${S}_stage1 naive_s$S; do                  # the greedy view
  say "greedy view of $arm"
  llm4cov bench --tasks runs/smollm2v2/eval_tasks.jsonl --model local:runs/smollm2c4/$arm/naive/checkpoint \
    --mode direct --samples 1 --baselines '' --temperature 0.0 --max-tokens 512 --workers 2 \
    --no-plots --out runs/smollm2c4/$arm/greedy
done
for arm in progressive naive; do
  src=runs/smollm2c4/${arm}_s$S; [ $arm = progressive ] && src=${src}_stage1
  n5=$K/smollm2c4_${arm}_s${S}_direct_n5
  greedy=$K/smollm2c4_${arm}_s${S}_direct_greedy
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
done
python docs/results/learning_claims.py --write
say "done: commit $K/smollm2c4_*_s${S}_* and docs/results/learning.md"
