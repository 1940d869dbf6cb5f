"""A checkpoint run in this process with ``transformers`` (``--model local:PATH`` or a
fetched model's name, e.g. ``--model smollm2-135m``).

For small models and users without an inference server; a served model (``vllm serve``,
then ``--base-url``) is much faster. Prompts go through the checkpoint's own chat template
with the generation prompt; sampling uses the request's temperature, top-p, max tokens
and seed (temperature 0 = greedy); other settings (e.g. Qwen's top-k 20) come from the
checkpoint's ``generation_config.json``, as with vLLM.

Speed on CPU: generation uses the KV cache; concurrent requests (the agent loops of
several samples and tasks, awaiting :meth:`LocalTransformersPolicy.agenerate`, or the
threads of ``model serve``) meet in a batcher and are decoded together,
left-padded, up to ``batch_size`` at a time; a row stops at the end of its code block
(the closing fence after an opening one) or at end-of-turn. A prompt longer than the
model's context gets an empty answer (``finish_reason`` ``context_exceeded``, its
``prompt_tokens`` recorded), so a benchmark reports it as a failed round instead of
stopping; the answer's length is capped at what the context leaves.

Progress and interrupts: every decoding step reports the answer's length to the
policy's :class:`~llm4cov.util.progress.TokenMeter` (``policy.meter``; ``gen`` shows
tokens, tokens/s and the time left), and stops the rows whose request was cancelled
(an awaiting caller cancelled by Ctrl-C), so an interrupted run does not wait for the
answer to finish; the batcher thread is a daemon and never holds the process up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import queue
import threading
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from llm4cov.policies.base import Generation, GenerationRequest, PolicyError, SamplingParams
from llm4cov.policies.options import ANSWER_PREFIX, Dtype
from llm4cov.util.escape import no_special_tokens
from llm4cov.util.progress import TokenMeter

log = logging.getLogger(__name__)

FENCE = "```"
CONTEXT_EXCEEDED = "context_exceeded"
CANCELLED = "cancelled"
DTYPES: tuple[str, ...] = typing.get_args(Dtype)


def is_dtype(name: str) -> TypeGuard[Dtype]:
    """Whether ``name`` is one of :data:`DTYPES`."""
    return name in DTYPES


def quantize_int8(model):
    """``model`` with int8 ``nn.Linear`` layers: per-output-channel int8 weights, fp32
    activations quantized per call (``torch.ao.quantization.quantize_dynamic``, CPU)."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notice of torch.ao
        return quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig},
                                dtype=torch.qint8)


def closed_code_block_end(text: str, final: bool = False) -> int | None:
    """The end offset (just after the closing fence) of the first fenced code block in
    ``text`` that has a non-blank body, or None while there is none.

    A closing fence is ```` ``` ```` alone on its line; while generating, its line must
    be finished (a newline follows), since ```` ``` ```` may still grow into an opening
    fence such as ```` ```systemverilog ````; ``final`` (the text is complete) accepts
    it at the very end. Empty blocks (```` ```\n\n``` ````, which small models emit)
    are skipped; a fence with an info string inside an open block opens a new block.
    """
    pos, body = 0, None  # body: offset where the open block's body starts
    while (i := text.find(FENCE, pos)) >= 0:
        line_end = text.find("\n", i)
        rest = text[i + len(FENCE):] if line_end < 0 else text[i + len(FENCE):line_end]
        if body is not None and not rest.strip():
            if line_end < 0 and not final:
                return None
            if text[body:i].strip():
                return i + len(FENCE)
            body = None
        elif line_end < 0:
            return None
        else:
            body = line_end + 1
        if line_end < 0:
            return None
        pos = line_end + 1
    return None


class CodeBlockStop:
    """``transformers`` stopping criterion: per row, True once the answer (``prefix``,
    the text the answer was started with, then the tokens after ``prompt_len``) holds a
    closed code block (:func:`closed_code_block_end`). Only rows with a backtick in one
    of their last two tokens are decoded (``fence_ids``: the token ids that contain one).
    """

    def __init__(self, tokenizer, prompt_len: int, fence_ids: frozenset[int],
                 prefix: str = "") -> None:
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.fence_ids = fence_ids
        self.prefix = prefix
        self.done: list[bool] | None = None

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        rows = input_ids.shape[0]
        if self.done is None:
            self.done = [False] * rows
        for i in range(rows):
            if not self.done[i] and any(int(t) in self.fence_ids for t in input_ids[i, -2:]):
                text = self.prefix + self.tokenizer.decode(input_ids[i, self.prompt_len:])
                self.done[i] = closed_code_block_end(text) is not None
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)


class LiveStop:
    """``transformers`` stopping criterion run at every decoding step: reports each
    answer's length (tokens after ``prompt_len``) to ``meter`` and stops the rows whose
    ``cancelled()`` is true, so no compute is spent on answers nobody waits for."""

    def __init__(self, meter: TokenMeter, prompt_len: int,
                 cancelled: Sequence[Callable[[], bool]] = ()) -> None:
        self.meter = meter
        self.prompt_len = prompt_len
        self.cancelled = cancelled

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        self.meter.advance(input_ids.shape[1] - self.prompt_len)
        rows = input_ids.shape[0]
        done = [bool(c()) for c in self.cancelled] if self.cancelled else [False] * rows
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


@dataclasses.dataclass
class _Pending:
    request: GenerationRequest
    future: concurrent.futures.Future


class LocalTransformersPolicy:
    """The model at ``path`` (a checkpoint directory or Hugging Face model id).

    ``device``: ``cuda``/``cpu``/...; None = CUDA when available. ``dtype``: ``auto``
    (bf16 on a GPU that supports it, else fp32), ``bf16``, ``fp32`` or ``int8`` (CPU
    only: every ``nn.Linear`` gets int8 weights, one scale per output channel, with
    activations quantized on the fly, PyTorch's dynamic quantization; about 2x the
    decoding speed of fp32 on CPU, with answers that may differ slightly from fp32's).
    ``batch_size``: most prompts in one ``generate`` call. ``batch_wait_s``: how long the
    batcher waits for more requests after the first one (seconds). ``stop_at_code_end``:
    stop a row at the end of its first code block. ``answer_prefix``: the text every
    answer starts with, written into the assistant turn before the model continues it
    (the opening fence the system prompt asks for, so that a weak model answers with
    code; "" = none); it is part of the returned text, counted in ``prompt_tokens``, not
    in ``completion_tokens``. ``cache``: the KV cache, ``static`` (allocated once per
    ``generate`` call for prompt + answer, no copying per token; faster for batches) or
    ``dynamic`` (grows by concatenation). ``name``: the name in result rows (default
    ``local:PATH``).

    Raises:
        ValueError: a bad ``batch_size``, ``dtype`` or ``cache``, or ``int8`` on a GPU.
    """

    def __init__(self, path: str, device: str | None = None, dtype: Dtype = "auto",
                 batch_size: int = 8, batch_wait_s: float = 0.25,
                 stop_at_code_end: bool = True, answer_prefix: str = ANSWER_PREFIX,
                 cache: str = "static", name: str | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}")
        if cache not in ("static", "dynamic"):
            raise ValueError("cache must be 'static' or 'dynamic'")
        self.path = path
        self.name = name or f"local:{path}"
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype == "int8" and self.device != "cpu":
            raise ValueError("dtype int8 (dynamic quantization) runs on the CPU only")
        bf16_ok = self.device.startswith("cuda") and torch.cuda.is_bf16_supported()
        self.dtype = dtype if dtype != "auto" else "bf16" if bf16_ok else "fp32"
        self.batch_size = batch_size
        self.batch_wait_s = batch_wait_s
        self.stop_at_code_end = stop_at_code_end
        self.answer_prefix = answer_prefix
        self.cache = cache
        self.tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
        torch_dtype = torch.bfloat16 if self.dtype == "bf16" else torch.float32
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
        self.model.to(self.device).eval()
        if self.dtype == "int8":
            self.model = quantize_int8(self.model)
        self.context_tokens = int(getattr(self.model.config, "max_position_embeddings", 0)
                                  or 0) or None
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos] if eos is not None else []
        self._eos = {*eos, self.tokenizer.eos_token_id} - {None}
        self._pad = (self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None
                     else min(self._eos))
        vocab = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        self._fence_ids = frozenset(i for i, t in enumerate(vocab) if t and "`" in t)
        self.meter = TokenMeter()
        self._lock = threading.Lock()
        self._queue: queue.Queue[_Pending] = queue.Queue()
        self._batcher: threading.Thread | None = None

    # -- requests from many threads and tasks meet here ---------------------------
    def _submit(self, request: GenerationRequest) -> concurrent.futures.Future:
        pending = _Pending(request, concurrent.futures.Future())
        with self._lock:
            if self._batcher is None:
                self._batcher = threading.Thread(target=self._serve, daemon=True,
                                                 name="llm4cov-local-batcher")
                self._batcher.start()
        self._queue.put(pending)
        return pending.future

    def generate(self, request: GenerationRequest) -> Generation:
        """Answer one request; concurrent calls are batched together (see the class)."""
        return self._submit(request).result()

    async def agenerate(self, request: GenerationRequest) -> Generation:
        """:meth:`generate` for an event loop, without a worker thread: cancelling the
        await (Ctrl-C) stops the answer's decoding at its next token."""
        return await asyncio.wrap_future(self._submit(request))

    def _serve(self) -> None:
        while True:
            batch = [self._queue.get()]
            deadline = time.monotonic() + self.batch_wait_s
            while len(batch) < self.batch_size:
                try:
                    batch.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            batch = [p for p in batch if not p.future.cancelled()]  # nobody waits for these
            if not batch:
                continue
            answers: list[Generation] | list[BaseException]
            try:
                answers = self.generate_batch([p.request for p in batch],
                                              [p.future.cancelled for p in batch])
            except BaseException as exc:
                answers = [exc] * len(batch)
            for p, answer in zip(batch, answers, strict=True):
                with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled
                    if isinstance(answer, BaseException):
                        p.future.set_exception(answer)
                    else:
                        p.future.set_result(answer)

    # -- one batch -------------------------------------------------------------------
    def generate_batch(self, requests: list[GenerationRequest],
                       cancelled: Sequence[Callable[[], bool]] = ()) -> list[Generation]:
        """Answers in request order. Requests with equal sampling parameters share
        ``generate`` calls of up to ``batch_size`` prompts of similar length (sorted by
        prompt tokens, so short prompts are not padded to a long one). Greedy decoding
        ignores seeds;
        a sampled batch is seeded with its first request's seed, so a seeded sample is
        reproducible for the same batch (always for a batch of one). ``cancelled``: one
        check per request; a request whose check turns true stops at its next token
        (its answer has ``finish_reason`` :data:`CANCELLED`)."""
        prompts = [self._encode(r.messages) for r in requests]
        results: dict[int, Generation] = {}
        groups: dict[SamplingParams, list[int]] = {}
        for i, r in enumerate(requests):
            if self.context_tokens and len(prompts[i]) >= self.context_tokens:
                log.warning("%s: prompt of %d tokens exceeds the context of %d tokens",
                            self.name, len(prompts[i]), self.context_tokens)
                results[i] = Generation(text="", model=self.name, prompt_tokens=len(prompts[i]),
                                        finish_reason=CONTEXT_EXCEEDED)
                continue
            groups.setdefault(dataclasses.replace(r.params, seed=None), []).append(i)
        for params, indices in groups.items():
            indices.sort(key=lambda i: len(prompts[i]))  # less left padding per batch
            for k in range(0, len(indices), self.batch_size):
                chunk = indices[k:k + self.batch_size]
                first = requests[chunk[0]]
                seed = first.seed if first.seed is not None else first.params.seed
                answers = self._generate([prompts[i] for i in chunk], params,
                                         seed if params.temperature > 0 else None,
                                         [cancelled[i] for i in chunk] if cancelled else ())
                for i, answer in zip(chunk, answers, strict=True):
                    results[i] = answer
        return [results[i] for i in range(len(requests))]

    def _encode(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's token ids: the chat template with the generation prompt, then
        the answer prefix, tokenized as one text (as SFT tokenizes a whole conversation);
        no message's text can hold a control token of the template
        (:func:`~llm4cov.util.escape.no_special_tokens`)."""
        messages = [{**m, "content": no_special_tokens(m["content"])} for m in messages]
        try:
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                      tokenize=False)
        except (ValueError, TypeError) as exc:
            raise PolicyError(f"{self.name}: chat template failed: {exc}") from exc
        return list(self.tokenizer(text + self.answer_prefix,
                                   add_special_tokens=False)["input_ids"])

    def _generate(self, prompts: list[list[int]], params: SamplingParams,
                  seed: int | None, cancelled: Sequence[Callable[[], bool]] = ()
                  ) -> list[Generation]:
        import torch
        from transformers import StoppingCriteriaList

        started = time.monotonic()
        width = max(map(len, prompts))
        ids = torch.tensor([[self._pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        budget = params.max_tokens
        if self.context_tokens:
            budget = min(budget, self.context_tokens - width)
        sampling = ({"do_sample": True, "temperature": params.temperature,
                     "top_p": params.top_p} if params.temperature > 0 else
                    {"do_sample": False, "temperature": None, "top_p": None, "top_k": None})
        stop = CodeBlockStop(self.tokenizer, width, self._fence_ids, self.answer_prefix)
        criteria = [LiveStop(self.meter, width, cancelled),
                    *([stop] if self.stop_at_code_end else [])]
        self.meter.start(max(1, budget), len(prompts))
        try:
            with torch.inference_mode():
                if seed is not None:
                    torch.manual_seed(seed)
                out = self.model.generate(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                    max_new_tokens=max(1, budget), pad_token_id=self._pad, use_cache=True,
                    cache_implementation=self.cache,
                    stopping_criteria=StoppingCriteriaList(criteria), **sampling)
        except (RuntimeError, ValueError) as exc:
            raise PolicyError(f"{self.name}: generation failed: {exc}") from exc
        finally:
            self.meter.stop()
        latency = time.monotonic() - started
        answers = [self._answer(row, len(prompt), latency)
                   for row, prompt in zip(out[:, width:].tolist(), prompts, strict=True)]
        return [dataclasses.replace(a, finish_reason=CANCELLED) if cancelled and cancelled[i]()
                else a for i, a in enumerate(answers)]

    def _answer(self, row: list[int], prompt_tokens: int, latency: float) -> Generation:
        end = next((j for j, t in enumerate(row) if t in self._eos or t == self._pad), None)
        tokens = row if end is None else row[:end + 1]
        text = self.answer_prefix + self.tokenizer.decode(tokens, skip_special_tokens=True)
        code_end = closed_code_block_end(text, final=True) if self.stop_at_code_end else None
        if code_end is not None:
            text = text[:code_end]
        return Generation(
            text=text, model=self.name, prompt_tokens=prompt_tokens,
            completion_tokens=len(tokens),
            finish_reason="stop" if end is not None or code_end is not None else "length",
            latency_s=latency,
        )

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "backend": "transformers", "device": self.device,
                "dtype": self.dtype, "batch_size": self.batch_size, "cache": self.cache,
                "context_tokens": self.context_tokens, "stop_at_code_end": self.stop_at_code_end,
                "answer_prefix": self.answer_prefix}
