"""Tests for bayeseval.report: evaluate() and the Report renderings."""

import html
import json
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

from bayeseval._api.warnings import ModelCheckWarning, ZeroVarianceWarning
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.datasets import make_pool
from bayeseval.estimate.intervals import proportion_ci
from bayeseval.estimate.stratified import stratified_risk
from bayeseval.models import fit_hierarchical
from bayeseval.plan import sample_size
from bayeseval.report import Report, evaluate

matplotlib.use("Agg")

WEIGHTS = {"s1": 0.2, "s2": 0.2, "s3": 0.2, "s4": 0.2, "s5": 0.1, "s6": 0.1}


@pytest.fixture(scope="module")
def pool():
    # s6 has true error rate 0 (so a rate-0 stratum) and a tiny share of the pool
    return make_pool(
        3000, 6, rates=[0.02, 0.05, 0.1, 0.2, 0.3, 0.0],
        weights=[0.4, 0.3, 0.15, 0.1, 0.04, 0.01], random_seed=0,
    )


@pytest.fixture(scope="module")
def rep(pool):
    return evaluate(pool, y_true="y_true", y_pred="y_pred", strata="stratum", weights=WEIGHTS,
                    target_halfwidth=0.05, random_seed=0)


def test_table_matches_the_building_blocks(pool, rep):
    counts = tabulate(pool, y_true="y_true", y_pred="y_pred", strata="stratum", weights=WEIGHTS)
    t = rep.table
    assert t["successes"].tolist() == counts.successes.tolist()
    assert t["trials"].tolist() == counts.trials.tolist()
    # the default guarantee ("stratum"): each stratum's adaptive interval
    lo, hi = proportion_ci(counts.successes, counts.trials, level=0.95, method="adaptive")
    np.testing.assert_allclose(t["lower"], lo, rtol=1e-12)
    np.testing.assert_allclose(t["upper"], hi, rtol=1e-12)
    np.testing.assert_allclose(t["halfwidth"], (hi - lo) / 2, rtol=1e-12)
    post = fit_hierarchical(counts, engine="exact", random_seed=0).summary(level=0.95)
    np.testing.assert_allclose(t["pooled_mean"], post["mean"], rtol=1e-10)
    np.testing.assert_allclose(t["pooled_lower"], post["lower"], rtol=1e-10)
    np.testing.assert_allclose(t["pooled_upper"], post["upper"], rtol=1e-10)
    # shrinkage: the posterior mean of kappa / (kappa + n_k), the population mean's weight in
    # E[theta_k | mu, kappa, data] = (1 - B_k) s_k / n_k + B_k mu (BDA3 section 5.3)
    kappa = fit_hierarchical(counts, engine="exact", random_seed=0).draws("kappa")
    n = counts.trials.to_numpy()
    np.testing.assert_allclose(t["shrinkage"], [np.mean(kappa / (kappa + nk)) for nk in n],
                               rtol=1e-10)
    assert t["shrinkage"].between(0, 1).all()
    with pytest.warns(ZeroVarianceWarning):  # s6 has rate 0
        sr = stratified_risk(counts, level=0.95)
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(sr.estimate, rel=1e-12)
    assert rep.overall.loc["reweighted", "lower"] == pytest.approx(sr.ci[0], rel=1e-12)
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(
        counts.total_successes / counts.total_trials, rel=1e-12)
    # the reweighted estimate is sum pi_k r_k
    r = counts.successes / counts.trials
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(
        sum(WEIGHTS[k] * r[k] for k in WEIGHTS), rel=1e-12)
    assert np.allclose(t["weight"], list(WEIGHTS.values()))


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


def test_no_composition_warning_when_shares_match():
    counts = Counts.from_arrays([10, 20], [500, 500], strata=["a", "b"])
    rep = evaluate(counts, weights={"a": 0.5, "b": 0.5}, random_seed=1)
    assert not any("composition" in w for w in rep.warnings)
    # equal shares: the reweighted rate equals the unweighted one (30 / 1000)
    assert rep.overall.loc["reweighted", "estimate"] == pytest.approx(0.03)
    assert rep.overall.loc["unweighted", "estimate"] == pytest.approx(0.03)


def test_without_weights_the_note_says_sample_composition():
    counts = Counts.from_arrays([3, 8], [100, 100], strata=["a", "b"])
    rep = evaluate(counts, random_seed=0)
    assert list(rep.overall.index) == ["unweighted"]
    assert any("test set's own composition" in n for n in rep.notes)
    assert rep.table["weight"].isna().all() and rep.table["extra_needed"].isna().all()


def test_model_flags_an_outlying_stratum():
    # nine strata near 5% and one at 60%: the outlier has by far the smallest predictive p-value
    s = [5, 4, 6, 5, 5, 4, 6, 5, 5, 120]
    counts = Counts.from_arrays(s, [100] * 9 + [200], strata=[f"g{i}" for i in range(10)])
    rep = evaluate(counts, random_seed=3)
    assert "ppc_counts" in rep.checks.index
    assert rep.table["ppc_p"].between(0, 1).all()
    assert rep.table["ppc_p"].idxmin() == "g9"


def test_model_check_verdicts_come_from_bayeseval_checks():
    from bayeseval import checks
    s = [5, 4, 6, 5, 5, 4, 6, 5, 5, 120]
    counts = Counts.from_arrays(s, [100] * 9 + [200], strata=[f"g{i}" for i in range(10)])
    rep = evaluate(counts, random_seed=3)
    post = fit_hierarchical(counts, random_seed=3)
    with pytest.warns(ModelCheckWarning):
        ppc = checks.posterior_predictive_check(post, random_seed=3)
    np.testing.assert_allclose(rep.table["ppc_p"], ppc.table["p_value"])
    assert ppc.outliers == ["g9"]
    assert rep.table["flags"].tolist() == [""] * 9 + ["model check"]
    assert any("'g9'" in w and "extreme under its own predictions" in w for w in rep.warnings)
    # a tiny stratum pulled hard toward the others (compare_frequentist's docstring example)
    small = evaluate(Counts.from_arrays([1, 6, 5, 7], [4, 60, 50, 70]), random_seed=0)
    side = checks.compare_frequentist(fit_hierarchical(small.counts, random_seed=0), random_seed=0)
    assert side.loc[0, "reason"] == "strong shrinkage of a small stratum"
    assert "strong shrinkage" in small.table.loc[0, "flags"]
    assert any("leans heavily on the other strata" in w for w in small.warnings)


def test_html_contains_every_stratum_and_warning(rep):
    before = dict(matplotlib.rcParams)
    text = rep._repr_html_()
    assert dict(matplotlib.rcParams) == before  # no global style change
    for k in rep.table.index:
        assert f">{k}<" in text
    for w in rep.warnings:
        assert html.escape(w) in text
    assert "data:image/png;base64," in text
    assert "population estimate" in text
    assert "<img" not in rep.to_html(plot=False)


def test_text_rendering(rep):
    text = str(rep)
    for k in rep.table.index:
        assert k in text
    assert "population estimate" in text and "Warnings:" in text
    assert f"{rep.overall.loc['reweighted', 'estimate']:.4f}" in text


def _parse_md_table(md: str) -> pd.DataFrame:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for ln in lines[2:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] == "estimand" or len(cells) != len(header):
            break
        rows.append(cells)
    return pd.DataFrame(rows, columns=header).set_index("stratum")


def test_markdown_round_trip(rep, tmp_path):
    path = rep.save(tmp_path / "r.md")
    md = path.read_text()
    back = _parse_md_table(md)
    t = rep.table
    assert back.index.tolist() == [str(k) for k in t.index]
    assert back["trials"].astype(int).tolist() == t["trials"].tolist()
    for col in ("rate", "lower", "upper", "pooled_mean", "pooled_lower", "pooled_upper"):
        np.testing.assert_allclose(back[col].astype(float), t[col].round(4), atol=1e-12)
    assert back["flags"].tolist() == t["flags"].tolist()
    for w in rep.warnings:
        assert w in md


def test_save_html_and_bad_suffix(rep, tmp_path):
    path = rep.save(tmp_path / "r.html")
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "s5" in text and "base64" in text
    with pytest.raises(ValueError, match="path must end"):
        rep.save(tmp_path / "r.pdf")


def test_to_dict_is_json_and_complete(rep):
    d = json.loads(json.dumps(rep.to_dict()))
    assert [s["stratum"] for s in d["strata"]] == list(rep.table.index)
    assert d["strata"][0]["trials"] == int(rep.table["trials"].iloc[0])
    assert d["population_estimate"] == "reweighted"
    assert d["overall"]["reweighted"]["estimate"] == pytest.approx(
        rep.overall.loc["reweighted", "estimate"])
    assert d["warnings"] == rep.warnings


def test_to_frame_and_xarray(rep):
    frame = rep.to_frame()
    assert frame["stratum"].tolist() == list(rep.table.index)
    assert len(frame) == len(rep.table)
    ds = rep.to_xarray()
    np.testing.assert_allclose(ds["pooled_mean"].to_numpy(), rep.table["pooled_mean"].to_numpy())
    assert ds.attrs["reweighted_estimate"] == pytest.approx(rep.overall.loc["reweighted", "estimate"])


def test_recall_with_multiindex_strata_and_empty_stratum():
    df = pd.DataFrame({
        "y": [1, 1, 0, 1, 1, 0, 0, 0] * 10,
        "p": [1, 0, 0, 1, 1, 1, 0, 0] * 10,
        "g": ["a", "a", "a", "b", "b", "b", "c", "c"] * 10,
        "h": ["x", "y"] * 40,
    })
    rep = evaluate(df, y_true="y", y_pred="p", strata=["g", "h"], metric="recall", random_seed=0)
    assert rep.metric == "recall"
    assert isinstance(rep.table.index, pd.MultiIndex)
    # stratum c has no positives: kept, flagged empty, warned about
    empty = [k for k in rep.table.index if k[0] == "c"]
    assert all("empty" in rep.table.loc[k, "flags"] for k in empty)
    assert any("no trials" in w for w in rep.warnings)
    assert "a | x" in str(rep)
    json.dumps(rep.to_dict())


def test_bad_arguments():
    counts = Counts.from_arrays([1], [10])
    with pytest.raises(ValueError, match="target_halfwidth"):
        evaluate(counts, target_halfwidth=0.7)
    with pytest.raises(ValueError, match="engine"):
        evaluate(counts, engine="stan")
    with pytest.raises(TypeError, match="y_true"):
        evaluate(pd.DataFrame({"a": [1]}))
    assert isinstance(evaluate(counts, random_seed=0), Report)


def test_html_omits_the_plot_for_many_strata():
    counts = Counts.from_arrays([5] * 61, [100] * 61)
    rep = evaluate(counts, random_seed=0)
    text = rep.to_html()
    assert "<img" not in text and "forest plot omitted: 61 strata" in text
    # strata, 2 header rows (column groups, column names), 1 overall header, overall rows
    assert text.count("<tr") == 61 + 2 + 1 + len(rep.overall)


def test_evaluate_refuses_a_score_column_as_y_pred_naming_it():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 300)
    score = np.clip(np.where(y == 1, 0.9, 0.1) + rng.normal(0, 0.05, 300), 0.01, 0.99)
    df = pd.DataFrame({"y": y, "score": score, "g": rng.choice(["a", "b"], 300)})
    with pytest.raises(ValueError, match=r"y_pred column 'score' holds the fractional value") as err:
        evaluate(df, y_true="y", y_pred="score", strata="g")
    assert repr(float(score[0])) in str(err.value)  # the first row's score: every score is fractional


def test_saved_workbook_and_csv_never_hold_live_formulas(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    import pandas as pd

    from bayeseval import Counts, evaluate

    names = ['=HYPERLINK("http://x","y")', "@SUM(A1)", "plain"]
    rep = evaluate(Counts.from_arrays([3, 5, 4], [40, 50, 45], strata=names), random_seed=0)
    wb = openpyxl.load_workbook(rep.save(tmp_path / "r.xlsx"))
    ws = wb["strata"]
    header = [c.value for c in ws[1]]
    col = header.index("stratum") + 1 if "stratum" in header else 1
    cells = [ws.cell(r, col) for r in range(2, 5)]
    assert [c.value for c in cells] == names and all(c.data_type == "s" for c in cells)
    assert all(ws.cell(r, header.index("successes") + 1).data_type == "n" for r in range(2, 5))
    frame = pd.read_csv(rep.save(tmp_path / "r.csv"), keep_default_na=False)
    first = frame.columns[0] if "stratum" not in frame.columns else "stratum"
    assert frame[first].tolist() == ["'" + names[0], "'" + names[1], "plain"]
    assert frame["successes"].tolist() == [3, 5, 4]


# -- the guarantee ------------------------------------------------------------------------------
# configurations of the *other* strata (successes, trials); the stratum under test comes last
_ALIKE = ([4, 9, 12, 20, 31, 40, 6, 15, 25, 33, 18, 8], [50, 110, 150, 260, 380, 500, 70, 190,
                                                          300, 420, 230, 95])
_NEAR_010 = ([48, 36, 31, 22, 22, 5, 18, 9, 16, 43, 44, 48],
             [432, 336, 280, 171, 188, 68, 83, 57, 128, 415, 342, 460])
_MASKING = ([4, 6, 5, 3, 7, 4, 8], [50, 70, 60, 40, 80, 50, 25])  # an outlier 8 of 25 among them
_SPREAD = ([1, 12, 30, 55], [40, 60, 80, 90])
_ONE_OTHER = ([3], [40])


def _exact_coverage(others, n, own, level):
    """Min coverage over true rates of the report's interval for a stratum with ``n`` trials.

    The interval of every own count 0..n under the stratum's leave-one-out prior (which
    does not depend on its count); the report's interval at the count ``own`` must be the
    one enumerated. Coverage at rate p is sum_x Binomial(x; n, p) [lo_x <= p <= hi_x]
    (scipy), over 2,001 rates plus every interval end and its neighbours.
    """
    from scipy import stats

    from bayeseval._kernels.betabinom import beta_mixture_predictive
    from bayeseval._kernels.fab import DIFFUSE_WEIGHT, fab_intervals_all_counts
    from bayeseval._kernels.loo_prior import loo_beta_mixture

    s = np.append(others[0], own)
    t = np.append(others[1], n)
    rows = np.zeros(s.size, bool)
    rows[-1] = True
    w, a, b = loo_beta_mixture(s, t, rows=rows)
    pmf = beta_mixture_predictive(n, w[-1], a[-1], b[-1])
    iv = fab_intervals_all_counts(n, pmf, level, diffuse_weight=DIFFUSE_WEIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the model check may flag the outliers
        rep = evaluate(Counts.from_arrays(s, t), level=level, random_seed=0)
    got = rep.table.iloc[-1][["lower", "upper"]].to_numpy(float)
    np.testing.assert_allclose(got, [iv.lower[own], iv.upper[own]], rtol=1e-10, atol=1e-13)
    ends = np.concatenate([iv.lower, iv.upper])
    p = np.unique(np.clip(np.concatenate([np.linspace(0, 1, 2001), ends,
                                          np.nextafter(ends, 0), np.nextafter(ends, 1)]), 0, 1))
    pmf_x = stats.binom.pmf(np.arange(n + 1)[:, None], n, p[None, :])
    inside = (iv.lower[:, None] <= p[None, :]) & (p[None, :] <= iv.upper[:, None])
    return float((pmf_x * inside).sum(axis=0).min())


@pytest.mark.parametrize(
    ("others", "n", "own", "level"),
    [
        (_ALIKE, 5, 1, 0.95),
        (_ALIKE, 20, 2, 0.95),
        (_ALIKE, 100, 9, 0.90),
        (_ALIKE, 1000, 80, 0.95),
        (_NEAR_010, 40, 3, 0.95),  # a low-side outlier at 0.03 that looks typical
        (_NEAR_010, 200, 2, 0.95),
        (_MASKING, 25, 7, 0.95),  # a second outlier beside the first
        (_SPREAD, 500, 100, 0.95),
        (_ONE_OTHER, 50, 20, 0.95),  # a single other stratum to build the prior from
    ],
)
def test_stratum_guarantee_covers_every_rate_by_exact_enumeration(others, n, own, level):
    assert _exact_coverage(others, n, own, level) >= level - 1e-9


def test_stratum_guarantee_covers_a_low_side_outlier_that_average_misses():
    # seeded: 12 strata at 0.08-0.12 (50-500 trials) and one at 0.03 with 40 trials whose
    # count (3 of 40) looks typical, so the read rule leaves it on the pooled interval
    rng = np.random.default_rng(0)
    n = np.append(rng.integers(50, 500, 12), 40)
    s = rng.binomial(n, np.append(rng.uniform(0.08, 0.12, 12), 0.03))
    assert s[-1] == 3
    counts = Counts.from_arrays(s, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        average = evaluate(counts, random_seed=0, guarantee="average").table.iloc[-1]
        stratum = evaluate(counts, random_seed=0).table.iloc[-1]
    assert average["read"] == "pooled" and not average["lower"] <= 0.03 <= average["upper"]
    assert stratum["lower"] <= 0.03 <= stratum["upper"]
    # Clopper-Pearson (statsmodels "beta") is the exact interval it is measured against
    from statsmodels.stats.proportion import proportion_confint

    cp = proportion_confint(3, 40, alpha=0.05, method="beta")
    assert stratum["upper"] - stratum["lower"] <= 1.35 * (cp[1] - cp[0])


def test_without_two_strata_with_trials_the_interval_is_clopper_pearson():
    from statsmodels.stats.proportion import proportion_confint

    for guarantee in ("stratum", "average"):
        rep = evaluate(Counts.from_arrays([3, 0], [50, 0], strata=["a", "b"]), random_seed=0,
                       guarantee=guarantee)
        lo, hi = proportion_confint(3, 50, alpha=0.05, method="beta")
        assert rep.table.loc["a", ["lower", "upper"]].tolist() == pytest.approx([lo, hi], rel=1e-9)
        assert rep.table.loc["b", ["lower", "upper"]].isna().all()


def test_the_report_says_which_guarantee_it_keeps(rep):
    assert rep.guarantee == "stratum" and rep.to_dict()["guarantee"] == "stratum"
    assert rep.to_xarray().attrs["guarantee"] == "stratum"
    note = [f for f in rep.findings if f.flag == "guarantee"]
    assert len(note) == 1 and note[0].message.startswith("Guarantee 'stratum'")
    assert "not for a stratum that differs" in note[0].message
    for text in (str(rep), rep.to_markdown(), html.unescape(rep.to_html(plot=False))):
        assert "guarantee 'stratum'" in text and "cover each stratum's own rate" in text
    assert "title='lower bound of the stratum&#x27;s interval, covering its own rate" in \
        rep.to_html(plot=False)  # the column's header says what it promises
    ax = rep.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "raw rate, interval covering each stratum (adaptive)" in labels
    assert "pooled posterior (covers on average over strata)" in labels
    matplotlib.pyplot.close(ax.figure)
    average = evaluate(rep.counts, random_seed=0, guarantee="average")
    assert average.guarantee == "average" and "guarantee: average" in str(average)
    assert any(f.flag == "guarantee" and "covers on average" in f.message
               for f in average.findings)


@pytest.mark.parametrize(("value", "error"), [("both", ValueError), ("", ValueError),
                                              (1, TypeError), (None, TypeError)])
def test_bad_guarantee_is_refused_naming_it_and_the_choices(value, error):
    with pytest.raises(error, match=r"guarantee") as err:
        evaluate(Counts.from_arrays([1, 2], [10, 10]), guarantee=value)
    assert "['stratum', 'average']" in str(err.value) and repr(value) in str(err.value)
