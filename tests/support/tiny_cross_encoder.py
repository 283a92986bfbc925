"""A real cross-encoder small enough to build in a test: a BERT-shaped ONNX graph written
with the `onnx` package (input_ids, attention_mask, token_type_ids in; one logit a pair out)
and a word-level tokenizer made with `tokenizers`, saved as tokenizer.json beside it.

The graph reads what a cross-encoder reads, the pair `[CLS] query [SEP] passage [SEP]`, and
scores the passage: each word of the vocabulary has a weight, and a pair's logit is the sum
of the weights of its passage's tokens (token type 1, unmasked). Words in `FAVOURED` weigh
+4, words in `SHUNNED` -4, the rest 0.1: a test knows which passage it must put first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

FAVOURED = ("lighthouse", "keeper", "granite")
SHUNNED = ("gravel", "shed")
WORDS = (
    *FAVOURED,
    *SHUNNED,
    "the",
    "a",
    "of",
    "and",
    "notes",
    "about",
    "harbour",
    "beacon",
    "coast",
    "stone",
    "path",
    "garden",
    "built",
    "old",
    "new",
    "where",
    "is",
    "who",
    "tends",
    "cottage",
    "island",
)
SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


def build(folder: Path, *, bad_output: bool = False) -> Path:
    """Write `model.onnx` and `tokenizer.json` into `folder`; return the model's path.
    `bad_output`: the graph answers two numbers a pair (not a cross-encoder)."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = {token: index for index, token in enumerate((*SPECIAL, *WORDS))}
    _tokenizer(vocab).save(str(folder / "tokenizer.json"))
    model = folder / "model.onnx"
    _graph(vocab, width=2 if bad_output else 1, path=model)
    return model


def _tokenizer(vocab: dict[str, int]) -> Tokenizer:
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel

    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tokenizer


def _graph(vocab: dict[str, int], *, width: int, path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weights = np.full((len(vocab), 1), 0.1, dtype=np.float32)
    for token in SPECIAL:
        weights[vocab[token]] = 0.0
    for word in FAVOURED:
        weights[vocab[word]] = 4.0
    for word in SHUNNED:
        weights[vocab[word]] = -4.0
    # Token type 0 (the query) counts nothing, type 1 (the passage) counts fully.
    type_gate = np.array([[0.0], [1.0]], dtype=np.float32)
    head = np.ones((1, width), dtype=np.float32)
    initializers = [
        numpy_helper.from_array(weights, "word_weights"),
        numpy_helper.from_array(type_gate, "type_gate"),
        numpy_helper.from_array(head, "head"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "sequence_axis"),
    ]
    nodes = [
        helper.make_node("Gather", ["word_weights", "input_ids"], ["word"]),  # [b, s, 1]
        helper.make_node("Gather", ["type_gate", "token_type_ids"], ["gate"]),  # [b, s, 1]
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last_axis"], ["mask"]),  # [b, s, 1]
        helper.make_node("Mul", ["word", "gate"], ["gated"]),
        helper.make_node("Mul", ["gated", "mask"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "sequence_axis"], ["pooled"], keepdims=0),
        helper.make_node("MatMul", ["pooled", "head"], ["logits"]),  # [b, width]
    ]
    batch = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, batch),
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, batch),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", width])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
