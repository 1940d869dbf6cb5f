"""Local generation throughput: batched vs unbatched greedy decoding, same prompts, one run.

    python benchmarks/gen_throughput.py --model smollm2-135m \
        --tasks ../shared/corpus/train/verilog_eval_repos.jsonl --prompts 8 --max-tokens 256 \
        --dtypes fp32,int8 --batch-sizes 1,8

Prompts are the agent's first-round prompts (``build_messages``) of the first
``--prompts`` tasks. For each batch size the script times (a) prefill alone (one new
token per prompt) and (b) the full generation, and prints generated tokens/s (completion
tokens over wall seconds), the prefill share of the wall time and the ratio to batch
size 1 of the first dtype (fp32 unbatched, the baseline). Each ``--dtypes`` entry
loads the model again (``int8``: dynamic int8 quantization of the linear layers). The
machine may be shared, so the process CPU seconds are printed too:
tokens per CPU-second does not depend on other load (x threads = the rate on that many
idle cores, an upper bound). Greedy batched answers are compared with the unbatched
ones of the first row (left padding can change the last bits of fp32 sums, so an
occasional divergence is possible; int8 weights change the numbers, so their answers
may differ).
"""

from __future__ import annotations

import argparse
import json
import time


def _run(policy, requests, batch_size: int) -> tuple[float, float, list]:
    """Wall seconds, process CPU seconds and answers of one ``generate_batch``."""
    policy.batch_size = batch_size
    started, cpu = time.monotonic(), time.process_time()
    answers = policy.generate_batch(requests)
    return time.monotonic() - started, time.process_time() - cpu, answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m", help="Registered name or checkpoint.")
    parser.add_argument("--tasks", default="../shared/corpus/train/verilog_eval_repos.jsonl")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--batch-sizes", default="1,8")
    parser.add_argument("--dtypes", default="fp32", help="Comma list: fp32, int8, bf16.")
    parser.add_argument("--cache", default="static", choices=("static", "dynamic"))
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads.")
    parser.add_argument("--json", help="Also write the results to this JSON file.")
    args = parser.parse_args()

    import torch

    from llm4cov.agent.prompt import build_messages
    from llm4cov.models import resolve_model
    from llm4cov.policies import GenerationRequest, SamplingParams
    from llm4cov.policies.local_transformers import LocalTransformersPolicy
    from llm4cov.tasks.loaders import load_tasks

    torch.set_num_threads(args.threads)
    tasks = load_tasks(args.tasks)[: args.prompts]
    greedy = SamplingParams(temperature=0.0, max_tokens=args.max_tokens)
    requests = [GenerationRequest(task=t, messages=build_messages(t), params=greedy)
                for t in tasks]
    prefill_only = [GenerationRequest(task=r.task, messages=r.messages,
                                      params=SamplingParams(temperature=0.0, max_tokens=1))
                    for r in requests]
    rows, reference, load_s = [], None, {}
    for dtype in args.dtypes.split(","):
        started = time.monotonic()
        policy = LocalTransformersPolicy(resolve_model(args.model), device="cpu",
                                         dtype=dtype, cache=args.cache, name=args.model)
        load_s[dtype] = round(time.monotonic() - started, 1)
        for size in [int(s) for s in args.batch_sizes.split(",")]:
            prefill_s, prefill_cpu, _ = _run(policy, prefill_only, size)
            wall, cpu, answers = _run(policy, requests, size)
            tokens = sum(a.completion_tokens for a in answers)
            texts = [a.text for a in answers]
            reference = reference or texts
            rows.append({
                "dtype": dtype, "batch_size": size, "prompts": len(requests),
                "prompt_tokens": sum(a.prompt_tokens for a in answers),
                "completion_tokens": tokens, "wall_s": round(wall, 2),
                "prefill_s": round(prefill_s, 2), "tokens_per_s": round(tokens / wall, 1),
                "cpu_s": round(cpu, 2), "prefill_cpu_s": round(prefill_cpu, 2),
                "tokens_per_cpu_s": round(tokens / cpu, 1),
                "stopped_at_code_end": sum(a.finish_reason == "stop" for a in answers),
                "same_as_first_run": sum(a == b for a, b in zip(texts, reference, strict=True)),
            })
    base = rows[0]["tokens_per_s"]
    print(f"model {args.model}: load {load_s} s, torch threads {torch.get_num_threads()}, "
          f"{args.cache} KV cache")
    cpu_base = rows[0]["tokens_per_cpu_s"]
    print("dtype  batch  prompts  prompt_tok  gen_tok  wall_s  prefill_s  tok/s  ratio  "
          "cpu_s  prefill_cpu_s  tok/cpu_s  cpu_ratio  same")
    for r in rows:
        print(f"{r['dtype']:>5}  {r['batch_size']:>5}  {r['prompts']:>7}  "
              f"{r['prompt_tokens']:>10}  "
              f"{r['completion_tokens']:>7}  {r['wall_s']:>6}  {r['prefill_s']:>9}  "
              f"{r['tokens_per_s']:>5}  {r['tokens_per_s'] / base:>5.2f}  {r['cpu_s']:>5}  "
              f"{r['prefill_cpu_s']:>13}  {r['tokens_per_cpu_s']:>9}  "
              f"{r['tokens_per_cpu_s'] / cpu_base:>9.2f}  {r['same_as_first_run']}/{r['prompts']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"model": args.model, "load_s": load_s, "cache": args.cache,
                       "threads": torch.get_num_threads(), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
