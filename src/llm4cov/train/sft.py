"""One SFT stage on TRL's ``SFTTrainer`` (paper: ``theta(k+1)`` = SFT of ``theta(k)`` on
``D(k)``, cross-entropy on the generated testbench).

Loss only on the assistant turn (``assistant_only_loss`` with the model's chat template
or TRL's training variant of it), one sample per sequence (no packing), samples longer
than ``max_length`` dropped beforehand. Launch with ``accelerate launch`` for several
GPUs (configs in ``llm4cov/train/configs``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm4cov.train.config import TrainConfig, deciding
from llm4cov.train.data import DatasetError, LengthSplit, load_split
from llm4cov.train.result import REPORT_NAME, UNCHANGED, LossRecord, TrainResult
from llm4cov.train.schedule import schedule_check

log = logging.getLogger(__name__)


def fingerprint(model) -> str:
    """SHA-256 over every parameter's name, dtype, shape and bytes (sorted by name)."""
    import torch

    digest = hashlib.sha256()
    for name, param in sorted(model.named_parameters(), key=lambda item: item[0]):
        tensor = param.detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        digest.update(tensor.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def resolve_precision(precision: str) -> str:
    """``bf16`` or ``fp32`` for the config's ``precision`` on this machine.

    Raises:
        ValueError: ``bf16`` requested where no GPU supports it.
    """
    import torch

    bf16_ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if precision == "bf16" and not bf16_ok:
        raise ValueError("precision bf16 needs a GPU with bf16 support; use auto or fp32")
    return "bf16" if precision == "bf16" or (precision == "auto" and bf16_ok) else "fp32"


@dataclass
class PreparedStage:
    """A stage ready to train: the TRL trainer and what went into it."""

    config: TrainConfig
    trainer: Any
    split: LengthSplit
    samples_total: int
    devices: int
    grad_accumulation: int
    precision: str
    init_fingerprint: str | None


def _sft_args(config: TrainConfig, precision: str, grad_accumulation: int):
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(config.out),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler,
        warmup_steps=config.warmup_ratio,  # a float in [0, 1) is a ratio in transformers 5
        per_device_train_batch_size=config.per_device_batch_size,
        gradient_accumulation_steps=grad_accumulation,
        seed=config.seed,
        data_seed=config.seed,
        bf16=precision == "bf16",
        fp16=False,
        activation_checkpointing=config.gradient_checkpointing,
        logging_steps=config.logging_steps,
        save_strategy="steps" if config.save_steps else "no",
        save_steps=config.save_steps or 500,
        save_total_limit=config.keep_checkpoints,
        report_to="none",
        dataloader_pin_memory=torch.cuda.is_available(),
        max_length=config.max_length,
        packing=False,
        padding_free=False,
        assistant_only_loss=True,
    )


def _lora_config(config: TrainConfig):
    from peft import LoraConfig

    target = "all-linear" if config.lora_target == ("all-linear",) else list(config.lora_target)
    return LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha,
                      lora_dropout=config.lora_dropout, target_modules=target,
                      task_type="CAUSAL_LM")


def prepare_stage(config: TrainConfig) -> PreparedStage:
    """Load data, tokenizer and model and build the ``SFTTrainer`` (nothing trained yet).

    Raises:
        DatasetError: unusable data, or no sample fits ``max_length``.
        ModelNotFetched: ``init`` names a registered model not fetched yet.
        ValueError: bad batch arithmetic for the number of devices, or bf16 unsupported.
    """
    from llm4cov.models import resolve_model

    init = resolve_model(config.init)  # a fetched model's name -> its checkpoint
    tokenizer, total, split = load_split(config.data, init, config.max_length)
    import torch
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTTrainer

    if not split.kept:
        raise DatasetError(f"{config.data}: no sample fits max_length {config.max_length}")
    devices = PartialState().num_processes
    grad_accumulation = config.grad_accumulation(devices)
    precision = resolve_precision(config.precision)
    args = _sft_args(config, precision, grad_accumulation)  # before the model: ZeRO-3 init
    model = AutoModelForCausalLM.from_pretrained(
        init, dtype=torch.float32, attn_implementation=config.attn_implementation
    )  # fp32 master weights; bf16 is autocast (an lr of 1e-5 vanishes in bf16 weights)
    init_fp = fingerprint(model) if devices == 1 else None
    if config.trainable_layers is not None:
        freeze_below(model, config.trainable_layers)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list([{"messages": s.messages} for s in split.kept]),
        processing_class=tokenizer,
        peft_config=_lora_config(config) if config.lora else None,
    )
    lengths = [len(ids) for ids in trainer.train_dataset["input_ids"]]
    if len(lengths) != len(split.kept) or max(lengths) > config.max_length:
        raise RuntimeError(
            f"TRL prepared {len(lengths)} samples (longest {max(lengths)} tokens) but "
            f"{len(split.kept)} fit {config.max_length}: the length filter and TRL disagree"
        )
    return PreparedStage(config, trainer, split, total, devices, grad_accumulation,
                         precision, init_fp)


def freeze_below(model, trainable: int) -> None:
    """Freeze every weight of ``model`` but its top ``trainable`` decoder layers and the
    final norm (``TrainConfig.trainable_layers``).

    Raises:
        ValueError: the model has no decoder layer list, or fewer layers than ``trainable``.
    """
    decoder = model.get_decoder()
    layers = getattr(decoder, "layers", None)
    if layers is None or len(layers) < trainable:
        raise ValueError(f"trainable_layers {trainable}: the model has "
                         f"{0 if layers is None else len(layers)} decoder layers")
    for param in model.parameters():
        param.requires_grad_(False)
    for module in [*layers[len(layers) - trainable:], decoder.norm]:
        for param in module.parameters():
            param.requires_grad_(True)


def _save(stage: PreparedStage):
    """Save the final model into ``out`` (LoRA: adapter in ``out/adapter``, merged model in
    ``out``); returns the saved model."""
    trainer, out = stage.trainer, stage.config.out
    if not stage.config.lora:
        trainer.save_model(str(out))
        return trainer.model
    trainer.save_model(str(out / "adapter"))
    merged = trainer.model.merge_and_unload()
    if trainer.is_world_process_zero():
        merged.save_pretrained(str(out))
        trainer.processing_class.save_pretrained(str(out))
    return merged


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "trl", "peft",
                                              "accelerate", "datasets")}


def train_stage(config: TrainConfig) -> TrainResult:
    """Run one SFT stage and write ``config.out`` (model, tokenizer, ``train_report.json``).

    A stage whose report already exists with the same config is not rerun (its result is
    returned); with ``save_steps`` > 0 an interrupted stage resumes from its last
    checkpoint in ``out``.

    Raises:
        FileExistsError: ``out`` holds a finished stage with a different config.
        DatasetError / ValueError: see :func:`prepare_stage`.
    """
    if (config.out / REPORT_NAME).is_file():
        done = TrainResult.load(config.out)
        if deciding(done.config) != deciding(config.as_dict()):
            raise FileExistsError(
                f"{config.out} holds a finished stage with another config; choose another --out"
            )
        log.info("%s: stage already trained, reusing it", config.out)
        return done
    start = time.monotonic()
    stage = prepare_stage(config)
    from transformers.trainer_utils import get_last_checkpoint

    resume = get_last_checkpoint(str(config.out)) if config.out.is_dir() else None
    check = schedule_check()
    stage.trainer.add_callback(check)
    output = stage.trainer.train(resume_from_checkpoint=resume)
    model = _save(stage)
    state = stage.trainer.state
    result = TrainResult(
        checkpoint=str(config.out),
        config=config.as_dict(),
        samples_total=stage.samples_total,
        samples_kept=len(stage.split.kept),
        dropped=stage.split.dropped,
        tokens=stage.split.tokens,
        loss_tokens=stage.split.loss_tokens,
        devices=stage.devices,
        grad_accumulation=stage.grad_accumulation,
        precision=stage.precision,
        steps=state.global_step,
        losses=[LossRecord(step=r["step"], loss=r["loss"], learning_rate=r.get("learning_rate"),
                           grad_norm=r.get("grad_norm"))
                for r in state.log_history if "loss" in r],
        train_loss=output.training_loss,
        init_fingerprint=stage.init_fingerprint,
        final_fingerprint=fingerprint(model) if stage.devices == 1 else None,
        resumed_from_step=_checkpoint_step(resume),
        warnings=[check.warning] if check.warning else [],
        wall_s=round(time.monotonic() - start, 3),
        versions=_versions(),
    )
    if result.steps and result.final_fingerprint is not None \
            and result.final_fingerprint == result.init_fingerprint:  # None: multi-process
        result.warnings.append(UNCHANGED)
        log.warning("%s: %s", config.out, UNCHANGED)
    if stage.trainer.is_world_process_zero():
        result.save()
    return result


def _checkpoint_step(path: str | None) -> int | None:
    """The optimizer step of a transformers checkpoint dir ``.../checkpoint-<step>``."""
    return None if path is None else int(Path(path).name.rsplit("-", 1)[1])
