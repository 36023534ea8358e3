"""Coverage at stop of an atypical stratum under the two campaign guarantees (seeded campaigns).

Six strata: five at 0.06-0.08 with 2,000 rows each and ``s5`` at 0.14 with 500 rows (exact error
counts), target half-width 0.07, batches of 60 labels, 20 seeded campaigns per guarantee with
the same seeds. The number of campaigns whose stop covers ``s5`` is Binomial(20, c) for a
coverage ``c`` at stop; against ``c = 0.94`` (the level 0.95 less the 0.01 the guarantee allows)
the binomial standard error of the observed share is ``sqrt(0.94 * 0.06 / 20) = 0.053``, and the
tolerances below are exact binomial tail probabilities (SciPy), not normal approximations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval.campaign.simulation import simulate

REPEATS = 20
TARGET_COVERAGE = 0.94


def _pool() -> pd.DataFrame:
    frames = []
    for k, (rate, rows) in enumerate(zip([0.06, 0.065, 0.07, 0.075, 0.08, 0.14], [2000] * 5 + [500], strict=True)):
        errors = np.zeros(rows, int)
        errors[: round(rate * rows)] = 1
        frames.append(pd.DataFrame({"g": f"s{k}", "pred": 0, "truth": errors}))
    return pd.concat(frames, ignore_index=True)


def _covered(guarantee: str) -> pd.Series:
    iv = simulate(_pool(), strata="g", y_pred="pred", y_true="truth", rules=["expected_width"], n_repeats=REPEATS,
                  target_halfwidth=0.07, batch_size=60, random_seed=3, progress=False, guarantee=guarantee).intervals
    odd = iv[iv["stratum"] == "s5"]
    assert len(odd) == REPEATS
    # the true rate is the stratum's share of errors in the pool: 70 of 500
    np.testing.assert_allclose(odd["true_rate"], 70 / 500)
    return odd["covered"].astype(bool)


def test_average_misses_the_stratum_at_014_and_the_stratum_guarantee_covers_it():
    average, stratum = _covered("average"), _covered("stratum")
    # the pooled rule covers s5 in so few campaigns that a coverage of 0.94 would give as few
    # with probability below 0.001 (at most 14 of 20, a share of 0.70: 4.5 standard errors below)
    assert stats.binom.cdf(average.sum(), REPEATS, TARGET_COVERAGE) < 0.001
    # the per-stratum guarantee: not significantly below 0.94 at the one-sided 0.01 level
    # (at least 16 of 20, a share of 0.80)
    assert stats.binom.cdf(stratum.sum(), REPEATS, TARGET_COVERAGE) >= 0.01
    assert stratum.sum() > average.sum()
