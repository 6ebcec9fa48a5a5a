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
* :mod:`posenc.tables`: small tables shown as HTML in the book and as text;
* :mod:`posenc.scaling`: context extension of rotary embeddings (chapter 7);
* :mod:`posenc.validation`: the argument checks every public function uses.
"""

from .attention import causal_mask, self_attention, softmax
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
from .scaling import scaled_frequencies, yarn_attention_factor
from .similarity import cosine_distance_matrix, cosine_similarity_matrix, dot_product_matrix

__version__ = "0.1.0"

__all__ = [
    "LAYOUTS",
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
    "sinusoidal",
    "softmax",
    "wavelengths",
    "yarn_attention_factor",
]
