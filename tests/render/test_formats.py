"""Tests of ``bayeseval._render.formats``: number and text renderings shared by the results."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import stats

import bayeseval as be
from bayeseval._render.formats import fixed


@pytest.mark.parametrize(
    "x", [3e-6, -2.5e-9, 4.9e-5, 6.3e-4, 0.0049, 0.99999, 0.9999997, 1.0000004, 0.5, 0.12345, 12.5, 0.0, 1.0]
)
@pytest.mark.parametrize("places", [3, 4])
def test_fixed_shows_two_significant_digits_and_never_a_zero_or_one_the_value_is_not(x, places):
    text = fixed(x, places)
    shown = float(text)
    if x in (0.0, 1.0):
        assert text == f"{x:.{places}f}"
        return
    assert shown not in (0.0, 1.0) and math.copysign(1, shown) == math.copysign(1, x)
    if "e" in text:
        assert abs(x) < 1e-4 and abs(shown - x) <= 0.005 * abs(x)
        return
    decimals = len(text.split(".")[1])
    assert decimals >= places and abs(shown - x) <= 0.5 * 10**-decimals + 1e-15
    digits = text.lstrip("-0.").replace(".", "")
    assert len(digits) >= 2  # at least two significant digits
    if abs(x) >= 10.0 ** -(places - 1) and abs(float(f"{x:.{places}f}")) != 1.0:
        assert text == f"{x:.{places}f}"  # others keep ``places`` decimals


def test_a_rare_stratum_reads_its_clopper_pearson_interval_in_every_rendering():
    counts = be.Counts.from_arrays([3, 40_000], [10**6, 10**6], strata=["rare", "common"])
    report = be.evaluate(counts)
    lo, hi = stats.beta.ppf(0.025, 3, 10**6 - 2), stats.beta.ppf(0.975, 4, 10**6 - 3)  # Clopper-Pearson
    for name, out in [
        ("markdown", report.to_markdown()),
        ("html", report.to_html()),
        ("latex", report.to_latex()),
        ("text", str(report)),
    ]:
        line = next(ln for ln in out.splitlines() if "rare" in ln and "e-0" in ln)
        numbers = [float(v) for v in re.findall(r"\d\.\d+e-\d+", line)]
        assert np.isclose(numbers[0], 3e-6, rtol=0.005), name  # the rate
        assert np.isclose(numbers[1], lo, rtol=0.005) and np.isclose(numbers[2], hi, rtol=0.005), name


def test_an_audit_of_rare_rates_shows_them_in_every_rendering():
    import pandas as pd

    n = 200_000
    g = np.repeat(["a", "b"], n // 2)
    y, p = np.zeros(n, int), np.zeros(n, int)
    p[:3] = 1  # 3 false positives in group a, 60 in group b
    p[n // 2 : n // 2 + 60] = 1
    y[-5000:], p[-5000:] = 1, 1
    audit = be.audit(
        pd.DataFrame({"g": g, "y": y, "p": p}), groups="g", y_true="y", y_pred="p", metrics="fpr", random_seed=0
    )
    rates = {"a": 3 / 100_000, "b": 60 / 95_000}
    md = audit.to_markdown()
    rows = [
        ln.split(" | ") for ln in md.splitlines() if ln.startswith("| a | a | fpr") or ln.startswith("| b | b | fpr")
    ]
    header = next(ln for ln in md.splitlines() if ln.startswith("| g | group | metric")).split(" | ")
    for row in rows:
        shown = float(row[header.index("rate")])
        assert np.isclose(shown, rates[row[1]], rtol=0.01)
    html = audit.to_html()
    assert "3.00e-05" in html and "0.00063" in html  # both groups' rates, not 0.000 and 0.001
