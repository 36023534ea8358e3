"""Helpers shared by the test modules of this folder."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from scipy import special, stats

import bayeseval
from bayeseval import (
    Counts,
    ZeroVarianceWarning,
    bootstrap_ci,
    evaluate,
    fit_hierarchical,
    proportion_ci,
)
from bayeseval._api import metric_names
from bayeseval._api.warnings import BayesevalWarning
from bayeseval._kernels.disparity import mover_difference
from bayeseval.campaign import Annotation, Budget, Campaign
from bayeseval.campaign.loop.rule_state import RuleState
from bayeseval.cli.main import main as main_audit_report
from bayeseval.fairness import audit

matplotlib.use("Agg")


ROOT = Path(__file__).resolve().parents[1]


def _decision_state(s, n, threshold=0.10, margin=0.0, size=1500):
    k = len(s)
    return RuleState.from_counts(
        s,
        np.full(k, n),
        available=np.full(k, size - n),
        goal="decide",
        threshold=np.full(k, threshold),
        guarantee="stratum",
        margin=margin,
    )


def make_pool(n=400, seed=0):
    rng = np.random.default_rng(seed)
    pool_annotations = pd.DataFrame(
        {
            "region": rng.choice(["north", "south"], n),
            "pred": rng.integers(0, 2, n),
            "truth": rng.integers(0, 2, n),
            "text": [f"item {i}" for i in range(n)],
        },
        index=pd.Index(np.arange(1000, 1000 + n), name="id"),
    )
    return pool_annotations


def _ingest(c, rows, annotators, labels, relabel=False):
    frame = pd.DataFrame({"row": list(rows), "annotator": list(annotators), "label": [int(v) for v in labels]})
    return c.ingest(frame, id_column="row", annotator_column="annotator", relabel=relabel)


def content_pool(n=120, seed=4):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "region": rng.choice(["north", "south"], n),
            "pred": rng.integers(0, 2, n),
            "text": [f'review {i}: "fine" & <ok>' for i in range(n)],
            "image_url": [f"https://cdn.example.org/img/{i}.png?w=200" for i in range(n)],
            "stars": rng.integers(1, 6, n),
        },
        index=pd.Index(np.arange(1000, 1000 + n), name="id"),
    )


def _frame(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["w", "b", "a"], n, p=[0.5, 0.35, 0.15])
    sex = rng.choice(["f", "m"], n)
    y = rng.binomial(1, np.where(race == "b", 0.45, 0.3))
    flip = rng.random(n) < np.where(race == "a", 0.3, 0.15)
    return pd.DataFrame({"y": y, "p": np.where(flip, 1 - y, y), "race": race, "sex": sex})


def _two_groups(n, r1, r2, seed=0):
    """Exact rates: round(r * n) positives predicted positive among n positives per group."""
    k1, k2 = round(r1 * n), round(r2 * n)
    y = np.ones(2 * n, int)
    p = np.r_[np.ones(k1), np.zeros(n - k1), np.ones(k2), np.zeros(n - k2)].astype(int)
    return pd.DataFrame({"y": y, "p": p, "g": ["a"] * n + ["b"] * n})


def _rows(spec):
    """Rows from {group: (true positives, false negatives, false positives, true negatives)}."""
    rows = []
    for g, (tp, fn, fp, tn) in spec.items():
        rows += [(g, 1, 1)] * tp + [(g, 1, 0)] * fn + [(g, 0, 1)] * fp + [(g, 0, 0)] * tn
    return pd.DataFrame(rows, columns=["g", "y", "p"])


def _collide():
    rows = [("a | b", "c", 1, 1)] * 40 + [("a | b", "c", 1, 0)] * 20
    rows += [("a", "b | c", 1, 1)] * 20 + [("a", "b | c", 1, 0)] * 40
    rows += [("x", "c", 1, 1)] * 30 + [("x", "c", 1, 0)] * 30
    return pd.DataFrame(rows, columns=["f1", "f2", "y", "p"])


SMALL = ("a4", "b1")


def _logit_cells(small: tuple[int, int]) -> pd.DataFrame:
    """4 x 3 cells, 60 rows each, logit = -1.5 + 1.5 [A = a4] + 1.5 [B = b1]; (a4, b1) small.

    Row a4 and column b1 are high (0.5), the other cells low (0.18), so the additive
    prediction for (a4, b1) is high (0.82) while the overall rate is about 0.33.
    """
    rows = []
    for a in ("a1", "a2", "a3", "a4"):
        for b in ("b1", "b2", "b3"):
            eta = -1.5 + 1.5 * (a == "a4") + 1.5 * (b == "b1")
            s, n = small if (a, b) == SMALL else (int(round(60 / (1 + np.exp(-eta)))), 60)
            rows += [(a, b, 1, 1)] * s + [(a, b, 0, 0)] * (n - s)
    return pd.DataFrame(rows, columns=["A", "B", "y", "p"])


def _audit(df, **kw):
    return audit(df, y_true="y", y_pred="p", groups=["A", "B"], metrics="selection_rate", random_seed=0, **kw)


def _three_groups() -> pd.DataFrame:
    """a: 150 of 500 selected, b: 175 of 500, c: 3 of 3 (a tiny group at the edge)."""
    rows = []
    for g, s, n in (("a", 150, 500), ("b", 175, 500), ("c", 3, 3)):
        rows += [(g, 1, 1)] * s + [(g, 0, 0)] * (n - s)
    return pd.DataFrame(rows, columns=["g", "y", "p"])


def _rows_audit_report(spec) -> pd.DataFrame:
    """Rows with y_pred = 1 for ``s`` of ``n`` per (race, sex) cell; y_true alternates."""
    rows = []
    for (race, sex), (s, n) in spec.items():
        for i in range(n):
            rows.append((race, sex, i % 2, int(i < s)))
    return pd.DataFrame(rows, columns=["race", "sex", "y", "p"])


APART = {("<a>", "f"): (100, 500), ("<a>", "m"): (100, 500), ("b", "f"): (300, 500), ("b", "m"): (300, 500)}


def _report(spec, **kw):
    return evaluate(_rows_audit_report(spec), y_true="y", y_pred="p", strata="race", random_seed=0, **kw)


def _saved_audit():
    df = pd.DataFrame(
        {
            "y": [1, 0] * 150,
            "p": ([1, 0] * 60 + [0, 0] * 15) + ([1, 0] * 40 + [1, 1] * 35),
            "g": ['=HYPERLINK("http://x","y")'] * 150 + ["b | c"] * 150,
        }
    )
    return df, audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"], tolerance=0.1, random_seed=0)


def exact_pool(rates, sizes, *, random_seed=0) -> pd.DataFrame:
    """Strata with exactly round(rate * size) errors each, shuffled."""
    rng = np.random.default_rng(random_seed)
    parts = []
    for i, (rate, size) in enumerate(zip(rates, sizes, strict=True)):
        err = np.zeros(size, bool)
        err[: int(round(rate * size))] = True
        rng.shuffle(err)
        truth = rng.integers(0, 2, size)
        parts.append(pd.DataFrame({"stratum": f"s{i}", "truth": truth, "pred": np.where(err, 1 - truth, truth)}))
    return pd.concat(parts, ignore_index=True)


def _pool_campaign_proxy(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < np.where(g == 0, 0.85, 0.7), y, 1 - y)
    judge = np.where(rng.random(n) < 0.9, y, 1 - y)
    pool = pd.DataFrame({"g": g, "pred": pred, "judge": judge})
    return pool, pd.Series(y, index=pool.index)


def _campaign_pool(seed=0):
    rng = np.random.default_rng(seed)
    sizes, rates = [400, 1500, 1500, 1500, 1500], [0.2, 0.05, 0.06, 0.06, 0.07]
    g = np.repeat(list("abcde"), sizes)
    err = rng.random(g.size) < np.repeat(rates, sizes)
    truth = rng.integers(0, 2, g.size)
    return pd.DataFrame({"g": g, "truth": truth, "pred": np.where(err, 1 - truth, truth)})


PROBE = r"""
import contextlib, io, json, sys
from bayeseval.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:  # argparse's --help of a subcommand
        code = exc.code
top = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"code": code, "out": out.getvalue(), "modules": top}))
"""


def run_cli(*args: str) -> dict:
    """Run ``bayeseval <args>`` in a fresh interpreter; its exit code, output and top-level modules."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


ALLOCATE = [
    "plan",
    "allocate",
    "--budget",
    "400",
    "--weights",
    '{"a": 0.7, "b": 0.3}',
    "--rates",
    '{"a": 0.1, "b": 0.4}',
    "--json",
]


SPLIT = ["plan", "split", "--n-total", "300000", "--n-test", "60000", "--share", "0.0042", "--n-min", "323", "--json"]


def _shared_hard(n: int, rng: np.random.Generator, p_hard=0.25, p_a=0.03, p_b=0.06):
    """Binary task where both models fail on the same hard rows plus a little of their own."""
    y = rng.integers(0, 2, n)
    hard = rng.random(n) < p_hard
    a = np.where(hard | (rng.random(n) < p_a), 1 - y, y)
    b = np.where(hard | (rng.random(n) < p_b), 1 - y, y)
    return y, a, b


CRIT = math.log(20.0)  # level 0.95


def _outlier(trials, rate, outlier_rate, strata=10):
    n = np.full(strata, trials)
    s = np.round(n * rate).astype(int)
    s[-1] = round(trials * outlier_rate)
    return s, n


def _wilson(s, n, level=0.95):
    return proportion_ci(np.asarray(s), np.asarray(n), level=level, method="wilson")


def _newcombe(s1, n1, s2, n2, level=0.95):
    l1, u1 = _wilson(s1, n1, level)
    l2, u2 = _wilson(s2, n2, level)
    return mover_difference(np.asarray(s1) / n1, l1, u1, np.asarray(s2) / n2, l2, u2)


REPORT_LIST = metric_names.choices(composite=False)


AUDIT_LIST = metric_names.choices()


def _flat(text: str) -> str:
    return " ".join(text.split())


TOL = 1e-12


def _proportion_coverage(n: int, p: float, reps: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hits = {"percentile": 0, "bca": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroVarianceWarning)
        for i in range(reps):
            x = (rng.random(n) < p).astype(float)
            for method in hits:
                lo, hi = bootstrap_ci(x, "mean", method=method, n_resamples=999, random_seed=i)
                hits[method] += lo <= p <= hi
    return {m: h / reps for m, h in hits.items()}


_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_crossed.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_crossed", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _alike(rng, k=12):
    n = rng.integers(50, 501, k)
    theta = rng.beta(8, 92, k)
    return rng.binomial(n, theta), n, theta


def _summary(s, n):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_hierarchical(s, n, random_seed=0, draws=50).summary(read=True)


RESULTS = ROOT / "tests" / "results"


def load_result(name: str) -> pd.DataFrame:
    """A table of reference values from ``tests/results/<name>.csv`` (sources in its README.md)."""
    return pd.read_csv(RESULTS / f"{name}.csv", comment="#")


# Rat tumour data: Gelman et al., Bayesian Data Analysis, 3rd ed., Table 5.1 (tests/results/rats.csv)
RATS_Y = load_result("rats")["tumours"].to_numpy()
RATS_N = load_result("rats")["rats"].to_numpy()


INTERNAL = [
    "z",
    "__key",
    "__salt",
    "__n",
    "__w",
    "__rank",
    "__rn",
    "__test",
    "__cut_rank",
    "__cut_id",
    "successes",
    "trials",
    "__s",
    "__t",
    "__p",
    "__s0",
    "__c0",
    "__rows",
    "__null",
    "rows",
    "key",
    "code",
    "class",
    "stratum",
    "weight",
    "a.b",
    "with space",
    'dq"uote',
    "sq'uote",
    "Z",
    "__KEY",
]


def _engines(frame: pd.DataFrame, tmp_path: pathlib.Path) -> dict:
    path = tmp_path / "rows.parquet"
    frame.to_parquet(path)
    return {
        "pandas": frame,
        "duckdb-frame": duckdb.from_df(frame),
        "parquet": str(path),
        "relation": duckdb.connect().read_parquet(str(path)),
    }


_names = st.sampled_from(INTERNAL + ["y", "p", "g", "label", "1", "é"])  # DuckDB renames an empty name


def make_pool_hardening_campaign(n=400, k=3, seed=0, pred=None):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "g": rng.choice([f"g{i}" for i in range(k)], n),
            "pred": rng.integers(0, 2, n) if pred is None else pred,
        },
        index=pd.Index(np.arange(n) * 7 + 3, name="rid"),
    )


def truth_of_hardening_campaign(rid) -> int:
    return int(sum(map(ord, str(rid))) % 3 == 0)


def recount(c, pool):
    """Error-rate successes and trials per stratum recomputed from the stored labels."""
    lab = c.labels()
    rows = pool.loc[lab.index]
    wrong = (lab["label"].to_numpy() != rows["pred"].to_numpy()).astype(int)
    s = pd.Series(wrong, index=lab.index).groupby(rows["g"].to_numpy()).sum()
    n = rows.groupby("g").size()
    return s, n


def assert_counts_match_labels(c, pool):
    s, n = recount(c, pool)
    st_ = c.status()
    assert (st_["successes"].reindex(s.index) == s).all()
    assert (st_["trials"].reindex(n.index) == n).all()
    assert st_["labelled"].sum() == n.sum()


def _raises(fn, *names, **kwargs):
    """fn(**kwargs) raises ValueError whose message names every string in ``names``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        with pytest.raises(ValueError) as info:
            fn(**kwargs)
    for name in names:
        assert re.search(re.escape(str(name)), str(info.value)), (name, str(info.value))
    return str(info.value)


@st.composite
def labelled_counts(draw, max_k: int = 12):
    k = draw(st.integers(2, max_k))
    n = np.array(draw(st.lists(st.integers(1, 10**6), min_size=k, max_size=k)), dtype=np.int64)
    frac = np.array(draw(st.lists(st.floats(0, 1), min_size=k, max_size=k)))
    s = np.floor(frac * n).astype(np.int64)
    labels = [f"s{i}" for i in range(k)]
    perm = np.array(draw(st.permutations(range(k))))
    return s, n, labels, perm


ROOT_hardening_report_cli = Path(bayeseval.__file__).resolve().parent.parent


def _one_line_error(capsys, argv, *words):
    code = main_audit_report(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, out, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bayeseval: error: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0], out


DATA = ["--y-true", "y", "--y-pred", "p", "--strata", "g"]


def _campaign(tmp_path, n=200, annotators=1, rule="uniform", batch_size=None, budget=None, **kw):
    rng = np.random.default_rng(3)
    pool = pd.DataFrame(
        {
            "g": np.repeat(["a", "b"], n // 2),
            "pred": rng.integers(0, 2, n),
            "text": [f"item {i}" for i in range(n)],
        }
    )
    return Campaign.create(
        tmp_path / "c.db",
        pool,
        strata="g",
        y_pred="pred",
        rule=rule,
        random_seed=1,
        budget=Budget(budget, batch_size=batch_size),
        **kw,
        annotation=Annotation(annotators=annotators, content="text"),
    ), pool


def _scipy_p_values(n: int, w, a, b) -> np.ndarray:
    """Two-sided mid-p of every count 0..n under a Beta-binomial mixture (scipy)."""
    y = np.arange(n + 1)
    pmf = (w[:, None] * stats.betabinom.pmf(y[None, :], n, a[:, None], b[:, None])).sum(axis=0)
    pmf = pmf / pmf.sum()
    below, above = np.cumsum(pmf), np.cumsum(pmf[::-1])[::-1]
    return np.minimum(1, 2 * np.minimum(below - pmf, above - pmf) + pmf)


NA = np.nan


def _judged_pool(size=60_000, labelled=3000, acc=0.75, judge_acc=0.9, seed=2):
    rng = np.random.default_rng(seed)
    right = rng.random(size) < acc
    judge = np.where(rng.random(size) < judge_acc, right, ~right)
    y_pred = rng.integers(0, 2, size)
    df = pd.DataFrame({"y_pred": y_pred, "judge_label": np.where(judge, y_pred, 1 - y_pred)})
    df["y_true"] = np.where(right, y_pred, 1 - y_pred).astype(float)
    keep = np.zeros(size, dtype=bool)
    keep[rng.choice(size, labelled, replace=False)] = True
    df.loc[~keep, "y_true"] = np.nan
    return df, keep


def _small():
    """Stratum a: 12 rows, 8 labelled; stratum b: 6 rows, 4 labelled (accuracy, binary)."""
    return pd.DataFrame(
        {
            "g": ["a"] * 12 + ["b"] * 6,
            "y_pred": [1] * 18,
            "judge": [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1] + [1, 1, 0, 0, 1, 0],
            "y_true": [1, 1, 1, 1, 0, 0, 0, 1, NA, NA, NA, NA] + [1, 0, 1, 0, NA, NA],
        }
    )


def _pool(size=4000, seed=0, labelled=0.1):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size)
    score = rng.random(size)
    y_pred = rng.integers(0, 2, size)
    right = rng.random(size) < 0.5 + 0.45 * score
    df = pd.DataFrame(
        {
            "g": g,
            "score": score,
            "y_pred": y_pred,
            "judge": np.where(rng.random(size) < 0.85, np.where(right, y_pred, 1 - y_pred), 1 - y_pred),
            "pi": np.where(score > 0.5, 0.05, 0.2),
        }
    )
    df["y_true"] = np.where(right, y_pred, 1 - y_pred).astype(float)
    df.loc[rng.random(size) > labelled, "y_true"] = np.nan
    return df


def _audit_pool(ppv_b, size=30_000, seed=7):
    """Two groups whose predictive parity gap is known (PPV 0.9 in a, ``ppv_b`` in b)."""
    rng = np.random.default_rng(seed)
    g = np.where(rng.random(size) < 0.5, "a", "b")
    y_pred = (rng.random(size) < 0.5).astype(int)
    ppv = np.where(g == "a", 0.9, ppv_b)
    y = np.where(y_pred == 1, rng.random(size) < ppv, rng.random(size) < 0.2).astype(int)
    judge = np.where(rng.random(size) < 0.9, y, 1 - y)
    df = pd.DataFrame({"g": g, "p": y_pred, "j": judge, "y": y.astype(float)})
    df.loc[rng.random(size) > 0.04, "y"] = np.nan  # about 300 labelled predicted positives a group
    return df


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


SLOWER = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


BIG = 10**9


def assert_raises_naming(fn, name: str, *args, **kwargs) -> None:
    """``fn(*args, **kwargs)`` raises ValueError/TypeError and the message names ``name``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        with pytest.raises((ValueError, TypeError)) as info:
            fn(*args, **kwargs)
    assert re.search(re.escape(name), str(info.value)), f"error message does not name {name!r}: {info.value!s}"


@st.composite
def count_arrays(draw, max_k: int = 30, max_n: int = BIG, min_n: int = 1):
    k = draw(st.integers(1, max_k))
    n = np.array(draw(st.lists(st.integers(min_n, max_n), min_size=k, max_size=k)), dtype=np.int64)
    frac = np.array(draw(st.lists(st.sampled_from([0.0, 1.0, 0.5, 0.01, 0.99, 0.3]), min_size=k, max_size=k)))
    s = np.floor(frac * n).astype(np.int64)
    return s, n


@st.composite
def shares(draw, k: int):
    raw = np.array(draw(st.lists(st.floats(0.001, 1.0), min_size=k, max_size=k)))
    return raw / raw.sum()


levels = st.floats(0.5, 0.999)


bad_counts = st.sampled_from([-1, 2.5, float("nan"), float("inf"), "ten", None])


WEIGHTS = {"s1": 0.2, "s2": 0.2, "s3": 0.2, "s4": 0.2, "s5": 0.1, "s6": 0.1}


# six strata near 0.08 and a small one at 0.45 (the conflict check's docstring example)
S = [4, 6, 5, 3, 7, 4, 9]


N = [50, 70, 60, 40, 80, 50, 20]


COUNTS_results_protocol_plots_cli = Counts.from_arrays(
    [3, 5, 9], [40, 50, 60], strata=["a", "b", "<c>"], weights=[0.5, 0.3, 0.2]
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def bisect_quantiles(W, A, B, qs, iters=80):
    """Quantiles (len(qs), J) of sum_g W[g] Beta(A[g], B[g]) by bisection on scipy's CDF."""
    J = A.shape[1]
    lo = np.zeros((len(qs), J))
    hi = np.ones((len(qs), J))
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        F = np.einsum("gj,gqj->qj", W, special.betainc(A[:, None, :], B[:, None, :], mid[None]))
        below = F < np.asarray(qs)[:, None]
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


Z95 = stats.norm.isf(0.025)

#: the metrics' definitions written out on rows (trials, successes), independently of Metric.masks
BY_HAND = {
    "error_rate": lambda y, p, pos: (np.ones_like(y, bool), y != p),
    "accuracy": lambda y, p, pos: (np.ones_like(y, bool), y == p),
    "recall": lambda y, p, pos: (y == pos, (y == pos) & (p == pos)),
    "precision": lambda y, p, pos: (p == pos, (p == pos) & (y == pos)),
    "fpr": lambda y, p, pos: (y != pos, (y != pos) & (p == pos)),
    "specificity": lambda y, p, pos: (y != pos, (y != pos) & (p != pos)),
    "npv": lambda y, p, pos: (p != pos, (p != pos) & (y != pos)),
    "fnr": lambda y, p, pos: (y == pos, (y == pos) & (p != pos)),
    "selection_rate": lambda y, p, pos: (np.ones_like(y, bool), p == pos),
}
