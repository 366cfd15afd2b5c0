"""Where the tensors live: pick a device once, describe it for the page badge."""

from __future__ import annotations

import os

import torch

VALID_DEVICES = ("cuda", "mps", "cpu")

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


def _available(name: str) -> bool:
    if name == "cuda":
        return torch.cuda.is_available()
    if name == "mps":
        mps = getattr(torch.backends, "mps", None)
        return bool(mps is not None and mps.is_available())
    return name == "cpu"


def pick_device(prefer: str | None = None) -> torch.device:
    """cuda if present, else mps, else cpu.

    `prefer` (or the env variable ATTN_DEVICE) names a device explicitly. A name
    that is not one of VALID_DEVICES raises ValueError; a known device that this
    machine does not have raises ValueError too, so a typo never silently moves
    the work somewhere unexpected.
    """
    name = prefer if prefer is not None else os.environ.get("ATTN_DEVICE", "").strip()
    if name:
        base = name.lower().split(":")[0]
        if base not in VALID_DEVICES:
            raise ValueError(f"unknown device {name!r}; valid names are {', '.join(VALID_DEVICES)}")
        if not _available(base):
            raise ValueError(f"device {name!r} was requested but is not available here")
        return torch.device(name.lower())
    for base in VALID_DEVICES:
        if _available(base):
            return torch.device(base)
    return torch.device("cpu")  # pragma: no cover - cpu is always available


def device_label(device: torch.device | str) -> str:
    """A short human description: 'GPU · NVIDIA H200' or 'CPU · 2 threads'."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"GPU · {torch.cuda.get_device_name(device)}"
    if device.type == "mps":
        return "GPU · Apple (MPS)"
    n = torch.get_num_threads()
    return f"CPU · {n} thread{'s' if n != 1 else ''}"


def parse_dtype(name: str | torch.dtype) -> torch.dtype:
    """'float16' -> torch.float16; a torch.dtype passes through; else ValueError."""
    if isinstance(name, torch.dtype):
        return name
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; valid names are {', '.join(DTYPES)}") from None


def dtype_bytes(dtype: str | torch.dtype) -> int:
    """Bytes per element of a floating dtype."""
    return torch.empty((), dtype=parse_dtype(dtype)).element_size()
