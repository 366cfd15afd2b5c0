"""attn_core: the compute behind Attention Explorer. Torch only; never imports streamlit.

Every public name below is a contract used by the pages and by outside tests.
"""

from .attention import (
    INITS,
    AttentionResult,
    attention,
    default_scale,
    fused_attention,
    random_qkv,
)
from .cost import (
    attention_macs,
    attention_probs_bytes,
    crossover_T,
    format_bytes,
    kv_cache_bytes,
    projection_macs,
)
from .device import DTYPES, VALID_DEVICES, device_label, dtype_bytes, parse_dtype, pick_device
from .heads import MHAResult, MultiHeadAttention, valid_head_counts
from .masks import (
    block_diagonal_mask,
    causal_mask,
    padding_mask,
    prefix_lm_mask,
    sliding_window_mask,
)
from .softmax import entropy, naive_softmax, softmax_jacobian, stable_softmax

__all__ = [
    "DTYPES",
    "INITS",
    "VALID_DEVICES",
    "AttentionResult",
    "MHAResult",
    "MultiHeadAttention",
    "attention",
    "attention_macs",
    "attention_probs_bytes",
    "block_diagonal_mask",
    "causal_mask",
    "crossover_T",
    "default_scale",
    "device_label",
    "dtype_bytes",
    "entropy",
    "format_bytes",
    "fused_attention",
    "kv_cache_bytes",
    "naive_softmax",
    "padding_mask",
    "parse_dtype",
    "pick_device",
    "prefix_lm_mask",
    "projection_macs",
    "random_qkv",
    "sliding_window_mask",
    "softmax_jacobian",
    "stable_softmax",
    "valid_head_counts",
]
