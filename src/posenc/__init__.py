"""posenc: the tested code behind the course on positional encoding.

The chapters show each idea in a few lines, then import the version here.
Submodules are named by what they hold:

* :mod:`posenc.encodings`: the sinusoidal table, its frequencies, the
  relative-position rotation, and the naive schemes of chapter 1;
* :mod:`posenc.attention`: single-head self-attention and a stable softmax;
* :mod:`posenc.similarity`: dot-product and cosine matrices between codes;
* :mod:`posenc.properties`: the properties a position code needs, each
  checked by a measurement (chapter 1);
* :mod:`posenc.analysis`: the code's closed forms as functions of the offset,
  and decoding positions back from codes (chapter 2);
* :mod:`posenc.rotary`: rotary position embeddings (RoPE), their two
  column layouts, angle precision and the long-term decay bound (chapter 6);
* :mod:`posenc.biases`: position as a bias on the score: Shaw's clipped
  offsets, T5's buckets, ALiBi's slopes (chapter 6);
* :mod:`posenc.tables`: small tables shown as HTML in the book and as text;
* :mod:`posenc.scaling`: context extension of rotary embeddings (chapter 7);
* :mod:`posenc.validation`: the argument checks every public function uses;
* :mod:`posenc.torch`: the PyTorch companion (chapter 8), modules for each
  method, tested against the executed Hugging Face ``transformers`` code.
  Importing ``posenc`` never imports it, so nothing above needs torch.
"""

from .attention import causal_mask, self_attention, softmax
from .biases import alibi_bias, alibi_slopes, shaw_relative_indices, t5_relative_bucket
from .encodings import (
    LAYOUTS,
    binary_encoding,
    frequencies,
    index_encoding,
    index_over_length_encoding,
    one_hot_encoding,
    relative_rotation,
    sinusoidal,
    wavelengths,
)
from .rotary import apply_rotary
from .scaling import scaled_frequencies, yarn_attention_factor
from .similarity import cosine_distance_matrix, cosine_similarity_matrix, dot_product_matrix

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
    "alibi_bias",
    "alibi_slopes",
    "apply_rotary",
    "binary_encoding",
    "causal_mask",
    "cosine_distance_matrix",
    "cosine_similarity_matrix",
    "dot_product_matrix",
    "frequencies",
    "index_encoding",
    "index_over_length_encoding",
    "one_hot_encoding",
    "relative_rotation",
    "scaled_frequencies",
    "self_attention",
    "shaw_relative_indices",
    "sinusoidal",
    "softmax",
    "t5_relative_bucket",
    "wavelengths",
    "yarn_attention_factor",
]
