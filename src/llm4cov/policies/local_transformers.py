"""A checkpoint run in this process with ``transformers`` (``--model local:PATH``).

For small models and users without an inference server; a served model (``vllm serve``,
then ``--base-url``) is much faster. Prompts go through the checkpoint's own chat template
with the generation prompt; sampling uses the request's temperature, top-p, max tokens
and seed (temperature 0 = greedy); other settings (e.g. Qwen's top-k 20) come from the
checkpoint's ``generation_config.json``, as with vLLM.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from llm4cov.policies.base import Generation, GenerationRequest, PolicyError, SamplingParams


class LocalTransformersPolicy:
    """The model at ``path`` (a checkpoint directory or Hugging Face model id).

    ``device``: ``cuda``/``cpu``/...; None = CUDA when available. ``dtype``: ``auto``
    (bf16 on a GPU that supports it, else fp32), ``bf16`` or ``fp32``. ``batch_size``:
    most prompts in one ``generate`` call.
    """

    def __init__(self, path: str, device: str | None = None, dtype: str = "auto",
                 batch_size: int = 8) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if dtype not in ("auto", "bf16", "fp32"):
            raise ValueError("dtype must be 'auto', 'bf16' or 'fp32'")
        self.path = path
        self.name = f"local:{path}"
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        bf16_ok = self.device.startswith("cuda") and torch.cuda.is_bf16_supported()
        self.dtype = "bf16" if dtype == "bf16" or (dtype == "auto" and bf16_ok) else "fp32"
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
        torch_dtype = torch.bfloat16 if self.dtype == "bf16" else torch.float32
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
        self.model.to(self.device).eval()
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos] if eos is not None else []
        self._eos = {*eos, self.tokenizer.eos_token_id} - {None}
        self._lock = threading.Lock()

    def generate(self, request: GenerationRequest) -> Generation:
        return self.generate_batch([request])[0]

    def generate_batch(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Answers in request order. Requests with equal sampling parameters and seed share
        ``generate`` calls of up to ``batch_size`` prompts, seeded with that seed, so a
        seeded sample is reproducible for the same batch (``generate`` = batch of one)."""
        groups: dict[tuple[SamplingParams, int | None], list[int]] = {}
        for i, r in enumerate(requests):
            seed = r.seed if r.seed is not None else r.params.seed
            groups.setdefault((r.params, seed), []).append(i)
        results: dict[int, Generation] = {}
        for (params, seed), indices in groups.items():
            for k in range(0, len(indices), self.batch_size):
                chunk = indices[k:k + self.batch_size]
                answers = self._generate([requests[i].messages for i in chunk], params, seed)
                for i, answer in zip(chunk, answers, strict=True):
                    results[i] = answer
        return [results[i] for i in range(len(requests))]

    def _generate(self, conversations: list[list[dict[str, str]]], params: SamplingParams,
                  seed: int | None) -> list[Generation]:
        import torch

        started = time.monotonic()
        try:
            enc = self.tokenizer.apply_chat_template(
                conversations, add_generation_prompt=True, tokenize=True, return_dict=True,
                return_tensors="pt", padding=True,
            ).to(self.device)
            sampling = ({"do_sample": True, "temperature": params.temperature,
                         "top_p": params.top_p} if params.temperature > 0 else {"do_sample": False})
            with self._lock, torch.inference_mode():
                if seed is not None:
                    torch.manual_seed(seed)
                out = self.model.generate(**enc, max_new_tokens=params.max_tokens,
                                          pad_token_id=self.tokenizer.pad_token_id, **sampling)
        except (RuntimeError, ValueError) as exc:
            raise PolicyError(f"{self.name}: generation failed: {exc}") from exc
        latency = time.monotonic() - started
        prompt_tokens = enc["attention_mask"].sum(dim=1).tolist()
        answers = []
        for row, n_prompt in zip(out[:, enc["input_ids"].shape[1]:].tolist(), prompt_tokens,
                                 strict=True):
            stop = next((j for j, t in enumerate(row) if t in self._eos), None)
            tokens = row if stop is None else row[:stop + 1]
            answers.append(Generation(
                text=self.tokenizer.decode(tokens, skip_special_tokens=True),
                model=self.name,
                prompt_tokens=int(n_prompt),
                completion_tokens=len(tokens),
                finish_reason="length" if stop is None else "stop",
                latency_s=latency,
            ))
        return answers

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "backend": "transformers", "device": self.device,
                "dtype": self.dtype, "batch_size": self.batch_size}
