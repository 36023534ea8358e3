"""The report's read columns under guarantee="average": which interval lower/upper are."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, evaluate, proportion_ci
from bayeseval.checks import conflict_check
from bayeseval.report.sections import read_flagged

# six strata near 0.08 and a small one at 0.45 (the conflict check's docstring example)
S = [4, 6, 5, 3, 7, 4, 9]
N = [50, 70, 60, 40, 80, 50, 20]


@pytest.fixture(scope="module")
def rep():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(Counts.from_arrays(S, N, strata=list("abcdefg")), random_seed=0,
                        guarantee="average")


def test_read_columns_belong_to_the_average_guarantee_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evaluate(Counts.from_arrays(S, N, strata=list("abcdefg")), random_seed=0)
    assert rep.guarantee == "stratum"
    assert not {"read", "read_reason", "read_lower", "read_upper"} & set(rep.table.columns)
    assert not any(f.flag == "read adaptive" for f in rep.findings)


def test_outlier_row_points_to_its_adaptive_interval(rep):
    t = rep.table
    # which interval: the leave-one-out conflict p-value at most 0.20 (or flagged) -> adaptive
    p = conflict_check(S, N).table["p_value"].to_numpy()
    assert t["read"].tolist() == np.where(p <= 0.20, "adaptive", "pooled").tolist()
    assert t["read"].tolist() == ["pooled"] * 6 + ["adaptive"]
    # its ends: the adaptive interval of proportion_ci, and the pooled interval elsewhere
    lo, hi = proportion_ci(S, N, method="adaptive")
    np.testing.assert_allclose(t["lower"].iloc[6], lo[6], rtol=1e-12)
    np.testing.assert_allclose(t["upper"].iloc[6], hi[6], rtol=1e-12)
    np.testing.assert_array_equal(t["lower"].iloc[:6], t["pooled_lower"].iloc[:6])
    np.testing.assert_array_equal(t["upper"].iloc[:6], t["pooled_upper"].iloc[:6])
    assert t.loc["g", "read_reason"].startswith("count above what the other strata predict (p = ")
    assert t.loc["a", "read_reason"] == "consistent with the other strata"
    note = [f for f in rep.findings if f.flag == "read adaptive"]
    assert len(note) == 1 and note[0].strata == () and note[0].severity == "note"
    assert "read adaptive" not in t.loc["g", "flags"]  # the read column marks it
    assert "'g'" in note[0].message and "lower and upper give it" in note[0].message
    assert any("their lower and upper are the adaptive interval" in w for w in rep.warnings)
    assert any(f.flag == "guarantee" and "'average'" in f.message for f in rep.findings)


def test_read_interval_follows_the_level():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evaluate(Counts.from_arrays(S, N), level=0.9, random_seed=0, guarantee="average")
    lo, hi = proportion_ci(S, N, method="adaptive", level=0.9)
    np.testing.assert_allclose(rep.table["lower"].iloc[6], lo[6], rtol=1e-12)
    np.testing.assert_allclose(rep.table["upper"].iloc[6], hi[6], rtol=1e-12)


def test_html_groups_read_columns_with_the_pooled_ones_and_explains_them(rep):
    text = rep.to_html(plot=False)
    groups = re.findall(r"<th class='g gs' colspan='(\d+)'>(\w+)</th>", text)
    assert ("5", "pooled") in groups
    assert re.search(r"title='which interval lower and upper are[^']*'>read</th>", text)
    assert re.search(r"title='lower bound of the interval read for the stratum[^']*'>lower</th>",
                     text)
    assert "read_<wbr>reason</th>" not in text  # the reason is the read cell's tooltip
    reason = rep.table.loc["g", "read_reason"]
    assert f"title='{reason}'><b>adaptive</b></td>" in text
    assert f"<b>{rep.table.loc['g', 'lower']:.4f}</b>" in text
    assert "title='consistent with the other strata'>pooled</td>" in text


def test_text_markdown_and_exports_carry_the_read_columns(rep, tmp_path):
    for text in (str(rep), rep.to_markdown(), rep.to_latex()):
        header = [ln for ln in text.splitlines() if "successes" in ln][0]
        cells = header.replace("\\_", "_").replace("|", " ").replace("&", " ").split()
        assert "read" in cells and "read_reason" not in header.replace("\\_", "_")
        assert "adaptive" in text
    md = [ln for ln in rep.to_markdown().splitlines() if ln.startswith("| g |")][0]
    assert "| adaptive |" in md
    frame = pd.read_csv(rep.save(tmp_path / "r.csv"))
    assert frame["read"].tolist() == rep.table["read"].tolist()
    assert frame["read_reason"].tolist() == rep.table["read_reason"].tolist()
    d = json.loads(json.dumps(rep.to_dict()))
    assert d["strata"][6]["read"] == "adaptive"
    assert d["strata"][6]["upper"] == pytest.approx(rep.table["upper"].iloc[6])
    assert d["guarantee"] == "average"
    assert rep.to_xarray()["read"].to_numpy().tolist() == rep.table["read"].tolist()


def test_without_a_pooled_model_there_is_nothing_to_read():
    rep = evaluate(Counts.from_arrays([3, 0], [40, 0], strata=["a", "b"]), random_seed=0,
                   guarantee="average")
    assert rep.posterior is None
    assert rep.table[["read", "read_reason"]].isna().all().all()
    for text in (str(rep), rep.to_markdown(), rep.to_html(plot=False)):
        assert ">read</th>" not in text and "| read |" not in text
    assert rep.to_xarray()["read"].to_numpy().tolist() == ["", ""]


def test_a_stratum_the_model_check_flags_never_reads_the_pooled_interval():
    # the predictive check and the read rule use different references: a flagged stratum
    # that the rule would leave on the pooled interval is pointed to its adaptive interval
    s, n = np.array([4, 6, 5, 3, 7, 4, 9]), np.array([50, 70, 60, 40, 80, 50, 20])
    table = pd.DataFrame({"read": ["pooled"] * 7,
                          "read_reason": "consistent with the other strata",
                          "ppc_p": np.linspace(0.001, 0.9, 7)})
    flagged = np.zeros(7, bool)
    flagged[1] = True
    read_lo, read_hi = read_flagged(Counts.from_arrays(s, n), table, flagged,
                                     (np.zeros(7), np.ones(7)), 0.95)
    lo, hi = proportion_ci(s, n, method="adaptive")
    assert table["read"].tolist() == ["pooled", "adaptive"] + ["pooled"] * 5
    np.testing.assert_allclose([read_lo[1], read_hi[1]], [lo[1], hi[1]], rtol=1e-12)
    assert read_lo[0] == 0.0 and read_hi[2] == 1.0
    assert table.loc[1, "read_reason"] == "flagged by the model check (p = 0.15)"


def test_forest_draws_the_interval_to_read_for_an_atypical_stratum(rep):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection

    from bayeseval import plots
    from bayeseval.models import fit_hierarchical

    lo, hi = proportion_ci(S, N, method="adaptive")
    # a Report: its lower/upper (the grey interval) already are the adaptive interval of 'g'
    ax = plots.forest(rep)
    grey = [c.get_segments() for c in ax.collections if isinstance(c, LineCollection)
            and np.allclose(c.get_color()[0][:3], matplotlib.colors.to_rgb("#555555"))]
    (x0, _), (x1, _) = grey[0][-1]
    np.testing.assert_allclose([x0, x1], [lo[6], hi[6]], rtol=1e-9)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "raw rate, interval read (pooled or adaptive: average coverage)" in labels
    matplotlib.pyplot.close(ax.figure)
    for data in (fit_hierarchical(S, N, random_seed=0),):
        ax = plots.forest(data)
        # each errorbar is a LineCollection of horizontal segments; the adaptive one is the
        # third family (orange) and holds only the stratum that reads it ('g', the bottom row)
        segs = [c.get_segments() for c in ax.collections if isinstance(c, LineCollection)]
        orange = [s for c, s in zip([c for c in ax.collections if isinstance(c, LineCollection)],
                                    segs, strict=True)
                  if np.allclose(c.get_color()[0][:3], matplotlib.colors.to_rgb("#e6730f"))]
        assert len(orange) == 1 and len(orange[0]) == 1
        (x0, y0), (x1, y1) = orange[0][0]
        np.testing.assert_allclose([x0, x1], [lo[6], hi[6]], rtol=1e-9)
        assert y0 == y1 == pytest.approx(-0.36)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("interval to read: adaptive") for t in labels)
        matplotlib.pyplot.close(ax.figure)


def test_forest_without_atypical_strata_draws_no_read_interval():
    import matplotlib

    matplotlib.use("Agg")
    from bayeseval import plots

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evaluate(Counts.from_arrays([4, 6, 5, 3], [50, 70, 60, 40]), random_seed=0,
                       guarantee="average")
    assert (rep.table["read"] == "pooled").all()
    ax = plots.forest(rep)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert not any(t.startswith("interval to read") for t in labels)
    matplotlib.pyplot.close(ax.figure)


@pytest.mark.parametrize("trials", [50_000, 1_000_000])
def test_read_column_reads_an_outlier_of_many_trials_from_its_own_data(trials):
    # nine strata at 0.20 and one at 0.10 (a gap of over 50 binomial standard errors): the
    # outlier reads its own interval, which holds its own rate and not the others'
    n = np.full(10, trials)
    s = n // 5
    s[-1] = trials // 10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = evaluate(Counts.from_arrays(s, n, strata=[f"s{i}" for i in range(10)]),
                         random_seed=0, guarantee="average").to_frame()
    assert frame["read"].tolist() == ["pooled"] * 9 + ["adaptive"]
    lo, hi = frame["lower"].iloc[-1], frame["upper"].iloc[-1]
    assert lo < 0.1 < hi < 0.15
