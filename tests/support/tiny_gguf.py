"""Write a tiny but real GGUF embedding model (a 2-layer BERT) that llama.cpp loads in a blink.

The weights are seeded random numbers, so the vectors mean nothing, but they are real
llama.cpp outputs: deterministic for a given text and different for different texts.
"""

from __future__ import annotations

import string
from pathlib import Path

import gguf
import numpy as np

HIDDEN = 32
FEED_FORWARD = 64
LAYERS = 2
HEADS = 2
CONTEXT = 512
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
_WORD_TEXT = (
    "the a an and or of to in on for with is are was be it this that as at by from not "
    "note notes search query result text title none task passage document meeting plan "
    "project idea garden coffee python code model vector keyword memory daily week today "
    "tomorrow yesterday read write find cat dog tree house water fire light dark apus"
)
_WORDS = _WORD_TEXT.split()


def vocabulary() -> list[str]:
    """WordPiece vocabulary in llama.cpp's spelling: word starts carry a `▁`, pieces do not."""
    pieces = list(string.ascii_lowercase) + list(string.digits) + list(string.punctuation)
    tokens = list(SPECIAL)
    tokens += ["\u2581" + piece for piece in pieces]
    tokens += pieces  # continuation pieces ("##x" in the Hugging Face vocabulary)
    tokens += ["\u2581" + word for word in _WORDS]
    return list(dict.fromkeys(tokens))  # llama.cpp refuses duplicate tokens


def write_tiny_gguf(
    path: Path, *, name: str = "tiny-bert", seed: int = 1234, block_scale: float = 0.2
) -> Path:
    """Write the model to `path`; `name` becomes general.name (family detection reads it).

    `block_scale` sizes the weights every token shares (the layers, the token type): small,
    a text's vector is about the mean of its words' own, and texts with no word in common get
    vectors far apart (at 0.2, any two texts are above 0.5)."""
    tokens = vocabulary()
    rng = np.random.default_rng(seed)

    def weights(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_block_count(LAYERS)
    writer.add_head_count(HEADS)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_tokenizer_model("bert")
    writer.add_token_list(tokens)
    types = [gguf.TokenType.CONTROL] * len(SPECIAL) + [gguf.TokenType.NORMAL] * (
        len(tokens) - len(SPECIAL)
    )
    types[UNK] = gguf.TokenType.UNKNOWN
    writer.add_token_types(types)
    writer.add_token_type_count(2)
    writer.add_pad_token_id(PAD)
    writer.add_unk_token_id(UNK)
    writer.add_bos_token_id(CLS)
    writer.add_eos_token_id(SEP)
    writer.add_sep_token_id(SEP)
    writer.add_mask_token_id(MASK)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)

    # numpy shapes are (rows, cols); GGUF stores them reversed, as llama.cpp expects.
    ones = np.ones(HIDDEN, dtype=np.float32)
    zeros = np.zeros(HIDDEN, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weights(len(tokens), HIDDEN))
    writer.add_tensor("token_types.weight", weights(2, HIDDEN, scale=block_scale))
    writer.add_tensor("position_embd.weight", weights(CONTEXT, HIDDEN, scale=0.02))
    writer.add_tensor("token_embd_norm.weight", ones.copy())
    writer.add_tensor("token_embd_norm.bias", zeros.copy())
    for block in range(LAYERS):
        prefix = f"blk.{block}"
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{prefix}.{part}.weight", weights(HIDDEN, HIDDEN, scale=block_scale))
            writer.add_tensor(f"{prefix}.{part}.bias", weights(HIDDEN, scale=0.02))
        writer.add_tensor(f"{prefix}.attn_output_norm.weight", ones.copy())
        writer.add_tensor(f"{prefix}.attn_output_norm.bias", zeros.copy())
        writer.add_tensor(
            f"{prefix}.ffn_up.weight", weights(FEED_FORWARD, HIDDEN, scale=block_scale)
        )
        writer.add_tensor(f"{prefix}.ffn_up.bias", weights(FEED_FORWARD, scale=0.02))
        writer.add_tensor(
            f"{prefix}.ffn_down.weight", weights(HIDDEN, FEED_FORWARD, scale=block_scale)
        )
        writer.add_tensor(f"{prefix}.ffn_down.bias", weights(HIDDEN, scale=0.02))
        writer.add_tensor(f"{prefix}.layer_output_norm.weight", ones.copy())
        writer.add_tensor(f"{prefix}.layer_output_norm.bias", zeros.copy())

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
