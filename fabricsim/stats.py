"""Means with Student-t confidence intervals over seeds."""

from __future__ import annotations

import math

import numpy as np

# Two-sided 95% Student-t quantiles t(0.975, df) for df = 1..30 (standard tables).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df: int) -> float:
    """Two-sided 95% Student-t quantile (normal 1.96 beyond 30 degrees of freedom)."""
    if df < 1:
        return math.nan
    return _T975[df - 1] if df <= 30 else 1.96


def mean_ci(values) -> dict[str, float]:
    """Mean and 95% confidence interval of independent samples (one per seed)."""
    v = np.asarray(values, float)
    n = len(v)
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "lo": mean, "hi": mean, "n": n}
    half = t975(n - 1) * float(v.std(ddof=1)) / math.sqrt(n)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "n": n}
