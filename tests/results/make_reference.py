"""Regenerate the reference values in this folder from independent tools (not from bayeseval).

Run from the repository root::

    python tests/results/make_reference.py

Computed files (statsmodels, SciPy):

* ``proportion_confint.csv``: ``statsmodels.stats.proportion.proportion_confint(x, n,
  alpha=1 - level, method=...)`` on a grid of counts, levels 0.8, 0.95 and 0.99, methods
  ``normal``, ``wilson``, ``agresti_coull``, ``beta`` (Clopper-Pearson) and ``jeffreys``.
* ``recall_se.csv``: the standard error ``sqrt(p (1 - p) / n)`` of a recall of 0.70 with ``n``
  positives and the 95% normal half-width ``z_{0.975} se`` in percent (SciPy's normal quantile),
  rounded as published in the sizing table.
* ``fleiss_kappa.csv``: ``statsmodels.stats.inter_rater.fleiss_kappa`` of the ratings table in
  ``fleiss_1971.csv``.

Transcribed files (published tables; this script only checks that they read back):
``rats.csv``, ``bda3_rats_hyper.csv``, ``efron_morris_1975.csv``, ``newcombe_1998.csv``,
``fleiss_1971.csv``. See README.md for their sources.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.inter_rater import fleiss_kappa
from statsmodels.stats.proportion import proportion_confint

HERE = Path(__file__).resolve().parent
METHODS = ("normal", "wilson", "agresti_coull", "beta", "jeffreys")
LEVELS = (0.8, 0.95, 0.99)


def count_grid() -> tuple[np.ndarray, np.ndarray]:
    """Counts ``x`` of ``n`` at the edges, near them and in the middle, for small to large n."""
    xs, ns = [], []
    for n in (1, 2, 5, 10, 17, 50, 100, 1000, 12345):
        for x in sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1, n}):
            if 0 <= x <= n:
                xs.append(x)
                ns.append(n)
    return np.array(xs), np.array(ns)


def proportion_confint_table() -> pd.DataFrame:
    x, n = count_grid()
    rows = []
    for method in METHODS:
        for level in LEVELS:
            lo, hi = proportion_confint(x, n, alpha=1 - level, method=method)
            rows.append(pd.DataFrame({"method": method, "level": level, "x": x, "n": n, "lower": lo, "upper": hi}))
    return pd.concat(rows, ignore_index=True)


def recall_se_table() -> pd.DataFrame:
    n = np.array([2000, 500, 200, 80, 40])
    se = np.sqrt(0.7 * 0.3 / n)
    return pd.DataFrame(
        {"n_positives": n, "se": se.round(4), "halfwidth_pct": (100 * stats.norm.isf(0.025) * se).round(1)}
    )


def fleiss_table() -> pd.DataFrame:
    ratings = pd.read_csv(HERE / "fleiss_1971.csv", comment="#").to_numpy()
    return pd.DataFrame({"table": ["fleiss_1971"], "kappa": [fleiss_kappa(ratings, method="fleiss")]})


def main() -> None:
    for name, frame in (
        ("proportion_confint", proportion_confint_table()),
        ("recall_se", recall_se_table()),
        ("fleiss_kappa", fleiss_table()),
    ):
        frame.to_csv(HERE / f"{name}.csv", index=False)  # shortest repr: round-trips exactly
    for name in ("rats", "bda3_rats_hyper", "efron_morris_1975", "newcombe_1998"):
        pd.read_csv(HERE / f"{name}.csv", comment="#")


if __name__ == "__main__":
    main()
