"""Write the 12-task bench subset of examples/pipeline_smollm2_cpu.yaml:
8 RTLLM tasks and 4 RealBench-dev tasks, in the benchmark files' order, to
runs/smollm2/bench_tasks.jsonl (run from the repository root)."""

import json
from pathlib import Path

IDS = {"rtllm/clkgenerator", "rtllm/right_shifter", "rtllm/LFSR", "rtllm/comparator_3bit",
       "rtllm/square_wave", "rtllm/ring_counter", "rtllm/JC_counter", "rtllm/counter_12",
       "realbench/sdc/sd_crc_16", "realbench/sdc/sd_crc_7", "realbench/sdc/sd_clock_divider",
       "realbench/aes/aes_key_expand_128"}
SOURCES = ("../shared/benchmarks/rtllm.jsonl", "../shared/benchmarks/realbench_dev.jsonl")

rows = [line for source in SOURCES
        for line in Path(source).read_text(encoding="utf-8").splitlines()
        if line.strip() and json.loads(line)["id"] in IDS]
out = Path("runs/smollm2/bench_tasks.jsonl")
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text("".join(line + "\n" for line in rows), encoding="utf-8")
print(f"{out}: {len(rows)} tasks")
