"""Colour vision deficiency, simulated: is a colour still told apart from its neighbour?

Machado, Oliveira & Fernandes (2009), severity 1.0 (full dichromacy): a 3x3 matrix on
linear RGB turns what a viewer with normal vision sees into what a protanope or a
deuteranope sees. Differences are CIE76 ΔE in CIELAB (D65): about 2.3 is the smallest
difference people notice side by side; the thresholds below ask for several times that.
"""

from __future__ import annotations

import numpy as np
from plotly.colors import sample_colorscale, unlabel_rgb

VISION = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
         [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
         [-0.011820, 0.042940, 0.968881]]
    ),
}  # fmt: skip

# Two series (or categories) of one chart: their colours at least this far apart in every
# vision (about four times the smallest noticeable difference).
SERIES_DE = 10.0
# A colour scale cut into SCALE_STEPS steps: neighbouring steps at least this far apart.
SCALE_STEPS = 9
SCALE_DE = 6.0


def rgb(colour: str) -> np.ndarray:
    """'#0072B2', 'rgb(0, 114, 178)' or 'rgba(…)' -> sRGB in 0..1."""
    c = colour.strip()
    if c.startswith("#"):
        c = c.lstrip("#")
        if len(c) == 3:
            c = "".join(ch * 2 for ch in c)
        return np.array([int(c[i : i + 2], 16) for i in (0, 2, 4)]) / 255
    return np.array([float(v) for v in unlabel_rgb(c)[:3]]) / 255


def _linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(lin: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ lin  # fmt: skip
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(colour: str, vision: str) -> np.ndarray:
    """The colour's CIELAB coordinates as a viewer with `vision` sees it."""
    return _lab(np.clip(VISION[vision] @ _linear(rgb(colour)), 0, 1))


def delta_e(a: str, b: str, vision: str) -> float:
    return float(np.linalg.norm(seen(a, vision) - seen(b, vision)))


def scale_steps(scale) -> list[str]:
    """A plotly colour scale (a name or [[stop, colour], …]) cut into SCALE_STEPS colours."""
    return sample_colorscale(scale, list(np.linspace(0, 1, SCALE_STEPS)))
