#!/usr/bin/env bash
# Carry an arm's unfinished n = 5 bench of phase 1 (preregistration.md) from one session
# to the next: checkpoints do not survive a session, the bench's answers can.
#
#   bash experiments/smollm2_cpu/carry.sh save SEED ARM      # at the end of a session
#   bash experiments/smollm2_cpu/carry.sh restore SEED ARM   # at the start of the next
#
# save packs the arm's bench folder (results.jsonl and the run's identity, nothing
# else) and the train reports of its SFTs into experiments/smollm2_cpu/carry/ (commit
# it). restore unpacks the bench folder into runs/ before `phase1.sh SEED ARM` runs
# again: the SFTs are redone (same data, same seed) and the bench resumes its
# results.jsonl (same identity). Its answers were made by the first training: as soon
# as the last SFT's train report exists (the bench starts right after it), compare the
# new train reports with the carried ones (`carry.sh compare SEED ARM`: the final
# weights' fingerprints equal, exit 0); if they differ, stop phase1.sh, delete the
# restored bench folder and run phase1.sh again (the bench starts anew).
set -euo pipefail
what=${1:?usage: carry.sh save|restore|compare SEED ARM}
S=${2:?seed}
ARM=${3:?arm: progressive or naive}
case $ARM in progressive) dir=progressive_s${S}_stage1 ;; naive) dir=naive_s$S ;;
  *) echo "arm must be progressive or naive, got $ARM" >&2; exit 2 ;; esac
C=experiments/smollm2_cpu/carry
pack=$C/${ARM}_s$S.tar.gz
reports() {  # the SFTs of the arm, in order
  if [ "$ARM" = progressive ]; then
    echo "smollm2c4/progressive_s${S}_stage0/naive/checkpoint/train_report.json"
  fi
  echo "smollm2c4/$dir/naive/checkpoint/train_report.json"
}
case $what in
  save)
    mkdir -p "$C"
    bench=smollm2c4/$dir/naive/bench
    test -d "runs/$bench" || { echo "no bench folder runs/$bench" >&2; exit 2; }
    tar -czf "$pack" -C runs --exclude='*.lock' "$bench" $(reports)
    echo "saved $pack ($(du -h "$pack" | cut -f1)): commit it" ;;
  restore)
    test -f "$pack" || { echo "nothing carried at $pack" >&2; exit 2; }
    mkdir -p runs "runs/carried_s$S"
    tar -xzf "$pack" -C runs "smollm2c4/$dir/naive/bench"
    tar -xzf "$pack" -C "runs/carried_s$S" $(reports)
    echo "restored runs/smollm2c4/$dir/naive/bench; the carried train reports are in runs/carried_s$S" ;;
  compare)
    for r in $(reports); do
      python - "runs/$r" "runs/carried_s$S/$r" <<'EOF'
import json, sys
new, old = (json.load(open(p)) for p in sys.argv[1:])
same = new["final_fingerprint"] == old["final_fingerprint"]
print(sys.argv[1], "the same weights (final fingerprint)" if same else
      f"DIFFERENT weights: {new['final_fingerprint']} != {old['final_fingerprint']}")
sys.exit(0 if same else 1)
EOF
    done ;;
  *) echo "usage: carry.sh save|restore|compare SEED ARM" >&2; exit 2 ;;
esac
