"""Tiny models the real engines load, made here from random weights: nothing is downloaded at test
time. A llama-architecture GGUF (the `gguf` package's GGUFWriter, the writer llama.cpp's own
convert_hf_to_gguf.py uses) with an SPM vocabulary of byte-fallback tokens, so that any prompt
tokenizes and any sampled token detokenizes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

# Small enough to load in well under a second on a CPU, large enough to split over devices.
LAYERS = 4
EMBEDDING = 64
HEADS = 4
KV_HEADS = 2
FEED_FORWARD = 128
CONTEXT = 2048
WORDS = ["the", "model", "group", "leader", "worker", "serves", "a", "token", "of", "and"]


def _vocabulary() -> tuple[list[str], list[float], list[int]]:
    """<unk>, <s>, </s>, byte tokens (SPM byte fallback) for ASCII only and a few words: a sampled
    byte above 0x7F would be half a UTF-8 character, which llama-server refuses to send."""
    from gguf import TokenType

    tokens = ["<unk>", "<s>", "</s>"]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(128)]
    types += [TokenType.BYTE] * 128
    tokens += ["\u2581" + w for w in WORDS] + ["\u2581"]
    types += [TokenType.NORMAL] * (len(WORDS) + 1)
    scores = [0.0] * 3 + [0.0] * 128 + [-float(i + 1) for i in range(len(WORDS) + 1)]
    return tokens, scores, [int(t) for t in types]


def llama_gguf(path: Path, seed: int = 0) -> Path:
    """Write a LAYERS-layer llama GGUF with random F32 weights to path."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens, scores, types = _vocabulary()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("lwsgen-tiny-llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBEDDING)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)

    def weight(*shape: int) -> np.ndarray:  # numpy (out, in): GGUF stores the dims reversed
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    kv = EMBEDDING // HEADS * KV_HEADS
    writer.add_tensor("token_embd.weight", weight(len(tokens), EMBEDDING))
    writer.add_tensor("output_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
    writer.add_tensor("output.weight", weight(len(tokens), EMBEDDING))
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
        writer.add_tensor(f"{block}.attn_q.weight", weight(EMBEDDING, EMBEDDING))
        writer.add_tensor(f"{block}.attn_k.weight", weight(kv, EMBEDDING))
        writer.add_tensor(f"{block}.attn_v.weight", weight(kv, EMBEDDING))
        writer.add_tensor(f"{block}.attn_output.weight", weight(EMBEDDING, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(EMBEDDING, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weight(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_up.weight", weight(FEED_FORWARD, EMBEDDING))
        writer.add_tensor(f"{block}.ffn_down.weight", weight(EMBEDDING, FEED_FORWARD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


# The Hugging Face llama for vLLM: two layers (pipeline parallel 2 puts one on each node), two KV
# heads (tensor parallel 2 splits them) of 64 dimensions (vLLM's CPU attention has kernels for head
# sizes 32, 64, 80, 96, 112, 128, 160, 192, 224 and 256 only: csrc/cpu/cpu_attn.cpp, v0.32.0).
HF_LAYERS = 2
HF_HEADS = 2
HF_HEAD_DIM = 64
HF_EMBEDDING = HF_HEADS * HF_HEAD_DIM
HF_CONTEXT = 32768  # the examples' --max-model-len may not exceed it


def _hf_tokenizer(directory: Path) -> int:
    """A byte-level BPE tokenizer without merges: every byte is a token, so any text encodes and
    any sampled token decodes. Returns the vocabulary's size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {symbol: i for i, symbol in enumerate(alphabet)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(["<s>", "</s>"])
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "model_max_length": HF_CONTEXT,
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    return tokenizer.get_vocab_size()


def _hf_model(directory: Path, config: dict, layer: Callable, seed: int) -> Path:
    """Write a Hugging Face decoder (tokenizer, config, random bfloat16 safetensors) to directory:
    what every architecture here shares, and layer(prefix, weight, ones) for each layer's own tensors
    (drawn in order from one seeded generator)."""
    import torch
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    vocab = _hf_tokenizer(directory)
    config = {
        **config,
        "hidden_size": HF_EMBEDDING,
        "intermediate_size": FEED_FORWARD,
        "num_hidden_layers": HF_LAYERS,
        "num_attention_heads": HF_HEADS,
        "num_key_value_heads": HF_HEADS,
        "head_dim": HF_HEAD_DIM,
        "vocab_size": vocab,
        "max_position_embeddings": HF_CONTEXT,
        "bos_token_id": vocab - 2,
        "eos_token_id": vocab - 1,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    (directory / "config.json").write_text(json.dumps(config, indent=1))
    generator = torch.Generator().manual_seed(seed)

    def weight(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=generator) * 0.05).to(torch.bfloat16)

    def ones(size: int) -> torch.Tensor:
        return torch.ones(size, dtype=torch.bfloat16)

    width = HF_HEAD_DIM * HF_HEADS
    tensors = {
        "model.embed_tokens.weight": weight(vocab, HF_EMBEDDING),
        "model.norm.weight": ones(HF_EMBEDDING),
        "lm_head.weight": weight(vocab, HF_EMBEDDING),
    }
    for index in range(HF_LAYERS):
        prefix = f"model.layers.{index}"
        tensors |= {
            f"{prefix}.input_layernorm.weight": ones(HF_EMBEDDING),
            f"{prefix}.post_attention_layernorm.weight": ones(HF_EMBEDDING),
            f"{prefix}.self_attn.q_proj.weight": weight(width, HF_EMBEDDING),
            f"{prefix}.self_attn.k_proj.weight": weight(width, HF_EMBEDDING),
            f"{prefix}.self_attn.v_proj.weight": weight(width, HF_EMBEDDING),
            f"{prefix}.self_attn.o_proj.weight": weight(HF_EMBEDDING, width),
        }
        tensors |= layer(prefix, weight, ones)
    save_file(tensors, str(directory / "model.safetensors"), metadata={"format": "pt"})
    for path in directory.iterdir():
        path.chmod(0o644)  # readable by the engine's user, as a downloaded model is
    return directory


def _mlp(prefix: str, weight: Callable) -> dict:
    return {
        f"{prefix}.gate_proj.weight": weight(FEED_FORWARD, HF_EMBEDDING),
        f"{prefix}.up_proj.weight": weight(FEED_FORWARD, HF_EMBEDDING),
        f"{prefix}.down_proj.weight": weight(HF_EMBEDDING, FEED_FORWARD),
    }


def hf_llama(directory: Path, seed: int = 0) -> Path:
    """Write a Hugging Face LlamaForCausalLM (config, random safetensors, tokenizer) to directory."""
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5, "rope_theta": 1e4}
    return _hf_model(directory, config, lambda prefix, weight, _: _mlp(f"{prefix}.mlp", weight), seed)


HF_EXPERTS = 4  # experts per layer; two route each token (expert parallel 2 puts two on each rank)


def hf_qwen3_moe(directory: Path, seed: int = 0) -> Path:
    """Write a Hugging Face Qwen3MoeForCausalLM (the family of the data + expert parallel example):
    every layer sparse with HF_EXPERTS experts, q/k norms as Qwen3 has them."""
    config = {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": FEED_FORWARD,
        "num_experts": HF_EXPERTS,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1e6,
    }

    def layer(prefix: str, weight: Callable, ones: Callable) -> dict:
        tensors = {
            f"{prefix}.self_attn.q_norm.weight": ones(HF_HEAD_DIM),
            f"{prefix}.self_attn.k_norm.weight": ones(HF_HEAD_DIM),
            f"{prefix}.mlp.gate.weight": weight(HF_EXPERTS, HF_EMBEDDING),
        }
        for expert in range(HF_EXPERTS):
            tensors |= _mlp(f"{prefix}.mlp.experts.{expert}", weight)
        return tensors

    return _hf_model(directory, config, layer, seed)
