"""Agreement between annotators: Cohen's and Fleiss' kappa per stratum.

References: Cohen's kappa against ``sklearn.metrics.cohen_kappa_score``; Fleiss' kappa against
the worked example of Fleiss (1971) as tabulated on Wikipedia (kappa = 0.210) and
``statsmodels.stats.inter_rater.fleiss_kappa`` when statsmodels is installed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from bayeseval.campaign.labels.agreement import agreement, cohen_kappa, fleiss_kappa
from tests.helpers import load_result

FLEISS_1971 = load_result("fleiss_1971").to_numpy().tolist()


def test_cohen_kappa_matches_sklearn():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 3, 40)
        b = np.where(rng.random(40) < 0.6, a, rng.integers(0, 3, 40))
        assert cohen_kappa(a.tolist(), b.tolist()) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_fleiss_kappa_matches_the_published_example_and_statsmodels():
    # the paper's 0.210, and statsmodels' value to 1e-12 (tests/results/fleiss_kappa.csv)
    ref = float(load_result("fleiss_kappa").set_index("table").loc["fleiss_1971", "kappa"])
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(ref, abs=1e-12) and round(ref, 3) == 0.210
    rng = np.random.default_rng(1)
    table = rng.multinomial(4, [0.5, 0.3, 0.2], size=30)
    try:
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
    except ImportError:  # statsmodels is not a dependency: the closed form below stands in
        p = table.sum(0) / table.sum()
        pbar = ((table**2).sum(1) - 4).mean() / 12
        expected = (pbar - (p**2).sum()) / (1 - (p**2).sum())
    else:
        expected = sm_fleiss(table, method="fleiss")
    assert fleiss_kappa(table) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 0], [1, 2]])


def test_agreement_function_without_double_annotations():
    ann = pd.DataFrame({"row": [1, 2], "annotator": ["a", "b"], "label": [1, 0]})
    got = agreement(ann, pd.Series(["g", "h"], index=[1, 2]))
    assert got["rows"].tolist() == [0, 0] and got["method"].isna().all() and got["kappa"].isna().all()


def test_agreement_with_annotators_changing_from_row_to_row_uses_fleiss():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(14)
    n = 60
    pair = rng.choice(["a", "b", "c"], (n, 2), replace=True)
    pair[pair[:, 0] == pair[:, 1], 1] = "d"
    first = rng.integers(0, 3, n)
    second = np.where(rng.random(n) < 0.6, first, rng.integers(0, 3, n))
    # given in reverse time order, with a late third annotation on the rows that disagree
    late = np.flatnonzero(first != second)
    ann = pd.DataFrame(
        {
            "row": np.r_[late, np.arange(n), np.arange(n)],
            "annotator": np.r_[["z"] * len(late), pair[:, 1], pair[:, 0]],
            "label": np.r_[rng.integers(0, 3, len(late)), second, first],
            "time": np.r_[[3.0] * len(late), [2.0] * n, [1.0] * n],
        }
    )
    got = agreement(ann, pd.Series("g", index=np.arange(n)))
    expected = sm_fleiss(aggregate_raters(np.stack([first, second], axis=1))[0], method="fleiss")
    assert got.loc["g", "method"] == "fleiss" and got.loc["g", "rows"] == n and got.loc["g", "per_row"] == 2
    assert got.loc["g", "kappa"] == pytest.approx(expected, abs=1e-12)
