"""Write the fixed evaluation set of the SmolLM2 loop (experiments/smollm2_cpu/notebook.md).

Every task whose direct prompt has at most 1,536 tokens (SmolLM2-135M's own tokenizer and
chat template): an agentic round adds the current testbench (<= 512 tokens) and its
feedback, and the answer (<= 512 tokens) must fit too, well inside the 8,192-token
context; and 64 such tasks keep the CPU bench of one checkpoint near an hour:

- the RTLLM tasks and the RealBench-dev tasks that fit;
- the training repos of verilog_eval_repos_named.jsonl that the contamination filter
  removes (ROUGE-L F >= 0.5 against a benchmark file): no checkpoint trains on them.

Writes runs/smollm2v2/eval_tasks.jsonl and prints the count per source (run from the
repository root, after `llm4cov model get smollm2-135m`):

    python experiments/smollm2_cpu/eval_set_smollm2.py
"""

import json
from pathlib import Path

from transformers import AutoTokenizer

from llm4cov.agent.prompt import build_messages
from llm4cov.models.store import resolve_model
from llm4cov.synth.contamination import ContaminationIndex
from llm4cov.tasks.loaders import load_tasks

MAX_PROMPT_TOKENS = 1536
BENCHMARKS = ("../shared/benchmarks/rtllm.jsonl", "../shared/benchmarks/realbench_dev.jsonl",
              "../shared/benchmarks/cvdp_example.jsonl")
SOURCES = BENCHMARKS[:2]
REPOS = "../shared/corpus/train/verilog_eval_repos_named.jsonl"
OUT = Path("runs/smollm2v2/eval_tasks.jsonl")

tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))


def fits(task) -> bool:
    ids = tokenizer.apply_chat_template(build_messages(task), tokenize=True,
                                        add_generation_prompt=True, return_dict=False)
    return len(ids) <= MAX_PROMPT_TOKENS


index = ContaminationIndex.from_task_files(BENCHMARKS)
chosen = {source: [t for t in load_tasks(source) if fits(t)] for source in SOURCES}
chosen[REPOS] = [t for t in load_tasks(REPOS) if index.check_task(t) is not None and fits(t)]
OUT.parent.mkdir(parents=True, exist_ok=True)
with OUT.open("w", encoding="utf-8") as f:
    for tasks in chosen.values():
        for task in tasks:
            f.write(json.dumps(task.model_dump(mode="json", exclude_none=True)) + "\n")
for source, tasks in chosen.items():
    print(f"{source}: {len(tasks)}")
print(f"{OUT}: {sum(len(t) for t in chosen.values())} tasks")
