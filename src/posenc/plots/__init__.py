"""Figures of the course: every function returns a :class:`matplotlib.figure.Figure`.

The figures carry labelled axes with units, a title, and colour-blind-safe
colour maps (see :mod:`posenc.plots.style`). They compute nothing of their
own: the numbers come from :mod:`posenc` and the plotting functions only draw
them. One submodule per chapter keeps related figures together; everything
is re-exported here, so ``from posenc import plots; plots.heatmap(...)``
works for any of them.
"""

from .encoding import (
    MEASURES,
    EncodingView,
    ProjectionView,
    SimilarityView,
    plot_columns_against_position,
    plot_cvd_heatmaps,
    plot_distance_against_offset,
    plot_encoding_heatmap,
    plot_pca_projection,
    plot_positions_against_column,
    plot_similarity,
)
from .experiment import (
    accuracy_figure,
    budget_figure,
    comparison_figure,
    cosine_figure,
    learning_curve_figure,
    power_figure,
    readout_figure,
    score_term_figure,
)
from .extrapolation import extension_figure, extrapolation_figure, scale_factor_figure
from .frequency import plot_distance_from_start, plot_pair_circles, plot_wavelengths
from .implementation import (
    plot_float_precision,
    plot_layouts,
    plot_learned_vs_fixed,
    plot_signal_ratio,
    plot_spacings,
)
from .inside import (
    RopeView,
    alibi_figure,
    angle_error_figure,
    decay_bound_figure,
    rope_score_figure,
    shaw_clip_figure,
    t5_bucket_figure,
)
from .mathematics import (
    binary_sinusoidal_figure,
    cosine_distance_offset_figure,
    decoding_figure,
    dot_product_offset_figure,
    frequency_wavelength_figure,
    separation_figure,
    shift_fit_figure,
    turn_direction_figure,
)
from .motivation import distance_by_offset, pooled_vectors, property_grid
from .style import CMAP_DIVERGING, CMAP_SEQUENTIAL, QUALITATIVE, detached, symmetric_limits

__all__ = [
    "CMAP_DIVERGING",
    "CMAP_SEQUENTIAL",
    "MEASURES",
    "QUALITATIVE",
    "EncodingView",
    "ProjectionView",
    "RopeView",
    "SimilarityView",
    "accuracy_figure",
    "alibi_figure",
    "angle_error_figure",
    "binary_sinusoidal_figure",
    "budget_figure",
    "comparison_figure",
    "cosine_distance_offset_figure",
    "cosine_figure",
    "decay_bound_figure",
    "decoding_figure",
    "detached",
    "distance_by_offset",
    "dot_product_offset_figure",
    "extension_figure",
    "extrapolation_figure",
    "frequency_wavelength_figure",
    "learning_curve_figure",
    "plot_columns_against_position",
    "plot_cvd_heatmaps",
    "plot_distance_against_offset",
    "plot_distance_from_start",
    "plot_encoding_heatmap",
    "plot_float_precision",
    "plot_layouts",
    "plot_learned_vs_fixed",
    "plot_pair_circles",
    "plot_pca_projection",
    "plot_positions_against_column",
    "plot_signal_ratio",
    "plot_similarity",
    "plot_spacings",
    "plot_wavelengths",
    "pooled_vectors",
    "power_figure",
    "property_grid",
    "readout_figure",
    "rope_score_figure",
    "scale_factor_figure",
    "score_term_figure",
    "separation_figure",
    "shaw_clip_figure",
    "shift_fit_figure",
    "symmetric_limits",
    "t5_bucket_figure",
    "turn_direction_figure",
]
