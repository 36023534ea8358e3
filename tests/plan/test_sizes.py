"""Tests for bayeseval.plan.sizes: sample sizes, half-widths, several metrics and subgroups."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bayeseval import plan
from bayeseval._api.results import Result
from bayeseval.plan import (
    GapPlan,
    MultiPlan,
    SplitDecision,
    SubgroupPlan,
    achieved_halfwidth,
    detectable_gap,
    halfwidth_table,
    sample_size,
    sample_size_multi,
    se_for,
    split_decision,
    subgroup_rows,
)
from tests.helpers import FAST, assert_raises_naming, levels, load_result

matplotlib.use("Agg")


# reference table of the normal formula n = ceil(z^2 r (1 - r) / e^2), z = 1.96:
# rows: rate; columns: e = 0.10, 0.05, 0.03, 0.02
SPEC_TABLE = {
    0.50: (97, 385, 1068, 2401),
    0.70: (81, 323, 897, 2017),
    0.80: (62, 246, 683, 1537),
    0.90: (35, 139, 385, 865),
    0.95: (19, 73, 203, 457),
}


E_COLS = (0.10, 0.05, 0.03, 0.02)


_bad_number = st.one_of(
    st.floats(max_value=0.0, allow_nan=False),
    st.just(float("nan")),
    st.just(float("inf")),
    st.floats(min_value=1.0, max_value=1e6),
)


def test_clopper_pearson_halfwidth_agrees_with_scipy_beta_quantiles():
    n = np.arange(1, 2001, dtype=float)
    for rate in (0.0, 0.02, 0.3, 0.5, 0.9, 1.0):
        x = rate * n
        with np.errstate(all="ignore"):
            lower = np.where(x > 0, stats.beta.ppf(0.025, np.maximum(x, 1e-300), n - x + 1), 0.0)
            upper = np.where(x < n, stats.beta.ppf(0.975, x + 1, np.maximum(n - x, 1e-300)), 1.0)
        ours = plan.achieved_halfwidth(n, rate=rate, method="clopper_pearson")
        np.testing.assert_allclose(ours, (upper - lower) / 2, rtol=1e-12, atol=0)


def test_plan_results_have_one_row_tables_with_closed_form_values():
    plan = subgroup_rows(323, 8, 0.004)
    assert isinstance(plan, SubgroupPlan) and isinstance(plan, Result)
    row = plan.table.iloc[0]
    assert row["minority_rows"] == 8 * 323
    assert row["total_rows"] == math.ceil(8 * 323 / 0.004 - 1e-9)

    gap = detectable_gap(rate_a=0.1, rate_b=0.15)
    assert isinstance(gap, GapPlan)
    # pooled two-proportion z-test sample size by hand
    from scipy.stats import norm

    za, zb, pbar = norm.ppf(0.975), norm.ppf(0.8), 0.125
    n = (za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(0.1 * 0.9 + 0.15 * 0.85)) ** 2 / 0.05**2
    assert gap.table.loc[0, "n_per_group"] == math.ceil(n)
    assert gap.to_dict()["solved_for"] == "n_per_group"

    decision = split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    assert isinstance(decision, SplitDecision)
    assert decision.table.loc[0, "n_test"] == math.ceil(323 / 0.0042)
    assert decision.to_dict()["branch"] == "grow_test"

    multi = sample_size_multi({"recall": 0.7}, halfwidth=0.05, prevalence=0.1)
    assert isinstance(multi, MultiPlan) and isinstance(multi, Result)
    trials = math.ceil(norm.ppf(0.975) ** 2 * 0.21 / 0.05**2)
    assert multi.to_frame().loc["recall", "trials"] == trials
    assert multi.rows == math.ceil(trials / 0.1)
    assert "recall" in repr(multi)


@FAST
@given(st.floats(1e-4, 0.2), st.floats(0.0, 1.0), levels, st.sampled_from(["normal", "wilson", "clopper_pearson"]))
def test_sample_size_positive_int(halfwidth, rate, level, method):
    if method == "normal" and rate in (0.0, 1.0):
        # documented: the normal formula has SE 0 there; the error says so and names rate
        assert_raises_naming(sample_size, "rate", halfwidth=halfwidth, rate=rate, level=level, method=method)
        return
    n = sample_size(halfwidth=halfwidth, rate=rate, level=level, method=method)
    assert isinstance(n, int) and n >= 1


@FAST
@given(st.floats(1e-3, 0.2), st.floats(0.01, 0.99))
def test_sample_size_normal_matches_closed_form(se, rate):
    # n = ceil(r(1-r)/se^2) (floating noise ignored)
    n = sample_size(se=se, rate=rate)
    exact = rate * (1 - rate) / se**2
    assert math.ceil(exact - 1e-9) <= n <= math.ceil(exact) + 1


def test_sample_size_bad_input_names_argument():
    assert_raises_naming(sample_size, "se", se=-0.01)
    assert_raises_naming(sample_size, "se", se=float("nan"))
    assert_raises_naming(sample_size, "halfwidth", halfwidth=0.0)
    assert_raises_naming(sample_size, "rate", halfwidth=0.02, rate=1.5)
    assert_raises_naming(sample_size, "level", halfwidth=0.02, level=1.0)
    assert_raises_naming(sample_size, "method", halfwidth=0.02, method="bogus")


def test_warnings_in_plain_words(rep):
    t = rep.table
    # s6 has 0 errors: rate-0 warning and flag
    assert t.loc["s6", "successes"] == 0 and "rate 0" in t.loc["s6", "flags"]
    assert any("'s6' has a rate of 0" in w and "not certainty" in w for w in rep.warnings)
    # strata wider than the target get the extra labels the Clopper-Pearson planner asks for
    wide = t.index[t["halfwidth"] > 0.05]
    assert len(wide) >= 1
    for k in wide:
        need = sample_size(halfwidth=0.05, rate=float(t.loc[k, "rate"]), method="clopper_pearson")
        assert t.loc[k, "extra_needed"] == max(0, need - t.loc[k, "trials"])
        assert "too wide" in t.loc[k, "flags"]
        assert any(f"'{k}' is too small" in w for w in rep.warnings)
    assert (t.loc[t["halfwidth"] <= 0.05, "extra_needed"] == 0).all()
    # composition: s1 is 40% of the test set but 20% of the population
    assert any("composition differs" in w and "not a population estimate" in w for w in rep.warnings)


def test_sample_size_se_conservative_figure():
    # s = 0.03, no planning rate -> n = ceil(0.25 / 0.0009) = 278
    assert sample_size(se=0.03) == 278
    assert sample_size(se=0.03, rate=0.5) == 278
    # n >= r(1-r)/s^2: 0.21 / 0.0009 = 233.3 -> 234
    assert sample_size(se=0.03, rate=0.7) == 234


@pytest.mark.parametrize("rate", sorted(SPEC_TABLE))
def test_sample_size_spec_table(rate):
    got = tuple(sample_size(halfwidth=e, rate=rate) for e in E_COLS)
    assert got == SPEC_TABLE[rate]
    # the table is made with z = 1.96; the exact quantile gives the same integers
    from_196 = tuple(math.ceil(1.96**2 * rate * (1 - rate) / e**2 - 1e-9) for e in E_COLS)
    assert from_196 == SPEC_TABLE[rate]


def test_sample_size_no_rate_is_conservative_row():
    assert tuple(sample_size(halfwidth=e) for e in E_COLS) == SPEC_TABLE[0.50]


@pytest.mark.parametrize("method", ["normal", "wilson", "clopper_pearson"])
@pytest.mark.parametrize("rate", [None, 0.01, 0.05, 0.3, 0.7, 0.93, 1.0])
@pytest.mark.parametrize("e", [0.1, 0.04, 0.015])
def test_sample_size_round_trip(method, rate, e):
    if method == "normal" and rate in (1.0,):
        return
    n = sample_size(halfwidth=e, rate=rate, method=method)
    assert achieved_halfwidth(n, rate=rate, method=method) <= e * (1 + 1e-12)
    if n > 1:
        assert achieved_halfwidth(n - 1, rate=rate, method=method) > e


def test_wilson_halfwidth_matches_scipy_at_integer_successes():
    # at n = 400, rate 0.3 -> x = 120 successes exactly: compare with SciPy's Wilson
    # interval (binomtest(...).proportion_ci(method="wilson")) and Clopper-Pearson ("exact")
    ci = stats.binomtest(120, 400).proportion_ci(confidence_level=0.95, method="wilson")
    assert achieved_halfwidth(400, rate=0.3, method="wilson") == pytest.approx((ci.high - ci.low) / 2, rel=1e-9)
    ci = stats.binomtest(120, 400).proportion_ci(confidence_level=0.95, method="exact")
    assert achieved_halfwidth(400, rate=0.3, method="clopper_pearson") == pytest.approx(
        (ci.high - ci.low) / 2, rel=1e-9
    )
    # x = 0: CP upper bound 1 - (alpha/2)^(1/n), lower bound 0
    assert achieved_halfwidth(50, rate=0.0, method="clopper_pearson") == pytest.approx(
        (1 - 0.025 ** (1 / 50)) / 2, rel=1e-9
    )


def test_planning_halfwidth_is_monotone_in_n():
    n = np.arange(1, 3000)
    for method in ("wilson", "clopper_pearson"):
        for rate in (0.0, 0.02, 0.5, 0.9):
            hw = achieved_halfwidth(n, rate=rate, method=method)
            assert np.all(np.diff(hw) < 0)


def test_exact_methods_need_more_near_the_edge():
    # near 0 or 1 the normal formula underestimates
    for e in E_COLS:
        normal = sample_size(halfwidth=e, rate=0.95)
        assert sample_size(halfwidth=e, rate=0.95, method="wilson") > normal
        assert sample_size(halfwidth=e, rate=0.95, method="clopper_pearson") > normal
    # the smallest n whose interval at x = r n (continuous) has half-width (upper - lower) / 2
    # at most the target, by a search over statsmodels' intervals ("beta" is Clopper-Pearson)
    from statsmodels.stats.proportion import proportion_confint

    for method, sm_method in (("wilson", "wilson"), ("clopper_pearson", "beta")):
        want = next(
            n
            for n in range(2, 1000)
            if np.diff(proportion_confint(0.95 * n, n, alpha=0.05, method=sm_method))[0] / 2 <= 0.05
        )
        assert sample_size(halfwidth=0.05, rate=0.95, method=method) == want


def test_se_target_with_exact_methods_uses_z_times_se():
    z = stats.norm.ppf(0.975)
    assert sample_size(se=0.02, rate=0.9, method="wilson") == sample_size(halfwidth=z * 0.02, rate=0.9, method="wilson")


def test_accuracy_figures():
    # accuracy p = 0.9
    assert round(se_for(0.9, 100), 3) == 0.030
    assert round(achieved_halfwidth(100, rate=0.9), 3) == 0.059
    assert round(se_for(0.9, 1000), 4) == 0.0095
    assert round(achieved_halfwidth(1000, rate=0.9), 3) == 0.019
    assert round(achieved_halfwidth(10000, rate=0.9), 3) == 0.006
    table = halfwidth_table(0.9, [100, 1000, 10000])
    assert table["halfwidth_normal"].round(3).tolist() == [0.059, 0.019, 0.006]
    assert list(table.index) == [100, 1000, 10000]


# recall 0.70 with n+ positives: se and 95% half-width (tests/results/recall_se.csv)
@pytest.mark.parametrize("n, se, hw_pct", list(load_result("recall_se").itertuples(index=False)))
def test_recall_figures(n, se, hw_pct):
    assert round(se_for(0.7, n), 4) == se
    assert round(100 * achieved_halfwidth(n, rate=0.7), 1) == hw_pct


def test_sample_size_multi_takes_the_maximum():
    plan = sample_size_multi(
        {"recall": 0.7, "precision": 0.8, "accuracy": 0.9},
        halfwidth=0.05,
        prevalence=0.1,
        predicted_positive_rate=0.08,
    )
    t = plan.table
    # recall: 323 true positives / 0.1 = 3230 rows; precision: 246 / 0.08 = 3075; accuracy 139
    assert t.loc["recall", "trials"] == 323 and t.loc["recall", "rows"] == 3230
    assert t.loc["precision", "trials"] == 246 and t.loc["precision", "rows"] == math.ceil(246 / 0.08)
    assert t.loc["accuracy", "rows"] == 139
    assert plan.rows == 3230 and plan.binding == "recall"
    # per-metric targets
    plan = sample_size_multi(
        {"recall": 0.7, "precision": 0.8},
        halfwidth={"recall": 0.10, "precision": 0.05},
        prevalence=0.1,
        predicted_positive_rate=0.08,
    )
    assert plan.binding == "precision" and plan.rows == 3075
    with pytest.raises(ValueError, match="prevalence"):
        sample_size_multi({"recall": 0.7}, halfwidth=0.05)


def test_subgroup_rows_figure():
    # 8 regions x 323 = 2584 positives; at 0.4% share about 646,000 rows
    plan = subgroup_rows(323, 8, 0.004)
    assert plan.minority_rows == 2584
    assert plan.total_rows == 646_000


@settings(max_examples=80, deadline=None)
@given(_bad_number)
def test_sample_size_bad_halfwidth(value):
    with pytest.raises((ValueError, TypeError), match="halfwidth"):
        sample_size(halfwidth=value)


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.floats(max_value=0.0), st.floats(min_value=1.0), st.just(float("nan"))))
def test_sample_size_bad_level(level):
    with pytest.raises((ValueError, TypeError), match="level"):
        sample_size(halfwidth=0.05, level=level)


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.floats(max_value=-1e-9), st.floats(min_value=1.0 + 1e-9), st.just(float("nan"))))
def test_sample_size_bad_rate(rate):
    with pytest.raises((ValueError, TypeError), match="rate"):
        sample_size(halfwidth=0.05, rate=rate)


@settings(max_examples=50, deadline=None)
@given(
    st.text(min_size=1, max_size=12).filter(
        lambda s: s.lower().replace("-", "_") not in ("normal", "wilson", "clopper_pearson")
    )
)
def test_sample_size_unknown_method(method):
    with pytest.raises(ValueError, match="method"):
        sample_size(halfwidth=0.05, method=method)


def test_sample_size_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        sample_size()
    with pytest.raises(ValueError, match="exactly one"):
        sample_size(se=0.01, halfwidth=0.02)
    with pytest.raises(TypeError, match="se"):
        sample_size(se="0.01")
    with pytest.raises(ValueError, match="rate"):
        sample_size(halfwidth=0.05, rate=1.0)  # normal SE is 0 at the edge
    with pytest.raises(ValueError, match="se"):
        sample_size(se=0.6)


def test_bools_where_counts_are_wanted_are_type_errors_naming_the_argument():
    with pytest.raises(TypeError, match=r"^trials must be counts, not bools"):
        se_for(0.1, True)
    with pytest.raises(TypeError, match=r"^trials must be counts, not bools"):
        halfwidth_table(0.1, [100, True])
    with pytest.raises(TypeError, match=r"^halfwidth must be a positive number, got True"):
        sample_size(halfwidth=True, rate=0.1)
    with pytest.raises(TypeError, match=r"^n_min must be an integer >= 1, got True"):
        subgroup_rows(True, 3, 0.1)
    assert math.isclose(float(se_for(0.1, 100)), math.sqrt(0.1 * 0.9 / 100))  # the closed form
