"""The audit's terminal summary: every line fits, and it says what the tables say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayeseval._render import audit_text
from bayeseval.fairness import audit


def _audit(long_names: bool = False):
    rng = np.random.default_rng(5)
    n = 3000
    name = (
        "a group whose name is far longer than any terminal column would hold in one line, on purpose"
        if long_names
        else "a"
    )
    g = rng.choice([name, "b", "c"], n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, n)
    flip = np.where(g == "c", 0.35, 0.1)  # c's predictions are wrong far more often
    p = np.where(rng.random(n) < flip, 1 - y, y)
    df = pd.DataFrame({"y": y, "p": p, "g": g})
    return df, audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.05, random_seed=0)


@pytest.mark.parametrize("long_names", [False, True])
@pytest.mark.parametrize("width", [60, 100])
def test_every_line_fits_the_width(long_names, width):
    _, res = _audit(long_names)
    text = audit_text.summary(res, width=width, more="Every table: --json.")
    assert max(len(line) for line in text.splitlines()) <= width
    if long_names:  # wrapped, never cut: the whole name is there once the lines are joined
        assert "in one line, on purpose" in " ".join(text.split())


def test_the_summary_says_what_the_tables_say():
    df, res = _audit()
    text = " ".join(audit_text.summary(res).split())
    for _, v in res.verdicts.iterrows():
        assert f"{v['criterion']} / {v['metric']}: {v['verdict']}; gap {v['gap']:.3f}" in text
    # the lowest-TPR group by a hand count is c, with its rate and trials
    pos = df[df["y"] == 1]
    rates = pos.groupby("g")["p"].mean()
    assert rates.idxmin() == "c"
    assert f"lowest c (rate {rates['c']:.3f}, {int((pos['g'] == 'c').sum()):,} trials)" in text
    assert text.startswith("Fairness audit of tpr, fpr over g (3 groups):")


def test_a_narrow_width_is_refused():
    _, res = _audit()
    with pytest.raises(ValueError, match="width must be at least 40.*20"):
        audit_text.summary(res, width=20)
