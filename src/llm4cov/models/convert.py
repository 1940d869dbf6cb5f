"""A GGUF file to a transformers checkpoint (fp32 safetensors + tokenizer), once.

transformers reads GGUF (``from_pretrained(dir, gguf_file=...)``, needs the ``gguf``
package) by dequantizing every tensor; such a model refuses ``save_pretrained``, so the
weights are copied into a plain model built from the same config and saved from there.
"""

from __future__ import annotations

from pathlib import Path

_PROBE = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
          {"role": "assistant", "content": "A"}]


def convert_gguf(gguf: Path, out: Path, chat_template: str | None = None) -> dict[str, int]:
    """Write ``gguf`` as a transformers checkpoint into ``out``. ``chat_template``
    replaces the GGUF's template when given (it must render the same text).

    Returns ``{"parameters": N, "context_tokens": C}``.

    Raises:
        ValueError: ``chat_template`` renders differently from the GGUF's template.
        OSError: unreadable GGUF or unwritable ``out``.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    where, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name)
    config = AutoConfig.from_pretrained(where, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(where, gguf_file=name, dtype=torch.float32)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=True)
    model.generation_config = loaded.generation_config
    if chat_template is not None:
        for prompt in (False, True):
            own = tokenizer.apply_chat_template(_PROBE, tokenize=False,
                                                add_generation_prompt=prompt)
            ours = tokenizer.apply_chat_template(_PROBE, tokenize=False,
                                                 chat_template=chat_template,
                                                 add_generation_prompt=prompt)
            if own != ours:
                raise ValueError(f"{gguf}: the replacement chat template renders differently")
        tokenizer.chat_template = chat_template
    context = int(getattr(config, "max_position_embeddings", 0) or 0)
    if context:
        tokenizer.model_max_length = context
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"parameters": sum(p.numel() for p in model.parameters()), "context_tokens": context}
