"""Fixtures shared by several test modules."""

from __future__ import annotations

import contextlib
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, Groups, evaluate
from bayeseval._backends import pandas_backend
from bayeseval.campaign import Annotation, Campaign
from bayeseval.campaign.simulation import synthetic_pool
from bayeseval.cli.main import main as main_audit_report
from bayeseval.datasets import load_compas
from bayeseval.datasets import make_pool as make_pool_campaign_metrics
from bayeseval.fairness import audit
from tests.helpers import APART, WEIGHTS, N, S, _bench, _frame, _ingest, _report, make_pool


@pytest.fixture(scope="module")
def pool_active_simulate():
    # 12 strata, largest 100x the smallest (68,577 ... 724 rows), error rates 0.07 ... 0.18
    return synthetic_pool(n_rows=200_000, n_strata=12, random_seed=1)


@pytest.fixture
def pool_annotations():
    return make_pool()


@pytest.fixture
def tie_broken(tmp_path, pool_annotations):
    """Two annotators on 160 rows, disagreeing on a known set; a third labels only those rows."""
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=11,
        annotation=Annotation(annotators=2),
    )
    rows = list(c.propose(160).index)
    rng = np.random.default_rng(11)
    first = pool_annotations.loc[rows, "truth"].to_numpy()
    flip = rng.random(len(rows)) < 0.15
    second = np.where(flip, 1 - first, first)
    _ingest(c, rows * 2, ["ana"] * len(rows) + ["bo"] * len(rows), np.r_[first, second])
    disagree = [r for r, f in zip(rows, flip, strict=True) if f]
    _ingest(c, disagree, ["cy"] * len(disagree), rng.integers(0, 2, len(disagree)))
    region = pool_annotations.loc[rows, "region"].to_numpy()
    yield c, rows, first, second, region
    c.close()


@pytest.fixture(scope="module")
def data():
    return _frame()


@pytest.fixture(scope="module")
def crossed(data):
    return audit(data, y_true="y", y_pred="p", groups=["race", "sex"], tolerance=0.1, random_seed=1)


@pytest.fixture(scope="module")
def apart():
    return _report(APART, groups=Groups(["race", "sex"], tolerance=0.1))


@pytest.fixture(scope="module")
def pool_campaign_spec():
    return synthetic_pool(n_rows=6_000, n_strata=4, size_ratio=8, random_seed=3)


@pytest.fixture(scope="module")
def preds_core_metric_names(tmp_path_factory):
    rng = np.random.default_rng(8)
    n = 800
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.85, y, 1 - y)
    df = pd.DataFrame({"y": y, "p": p, "g": rng.choice(["a", "b"], n)})
    path = tmp_path_factory.mktemp("m") / "preds.csv"
    df.to_csv(path, index=False)
    return df, path


@pytest.fixture(scope="module")
def comparison():
    return _bench().compare(seed=20240601, repeats=3)


@pytest.fixture(scope="module")
def demo_summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main_audit_report(["demo", "--quick", "--json", "--out", str(out)])
    assert code == 0
    return json.loads(buf.getvalue()), out


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 600
    return pd.DataFrame(
        {
            "id": rng.permutation(n).astype(np.int64) * 7919 - 2_000_000,
            "y": (rng.random(n) < 0.08).astype(np.int64),
            "p": rng.integers(0, 2, n).astype(np.int64),
            "g": rng.choice(["east", "west", "o'hara"], n),
        }
    )


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "y": rng.integers(0, 2, n),
            "p": rng.integers(0, 2, n),
            "g": rng.choice(["a", "b", "c"], n),
            "k": rng.choice([1, 2], n),
            "ys": rng.choice(["yes", "no"], n),
            "ps": rng.choice(["yes", "no"], n),
            "yb": rng.integers(0, 2, n).astype(bool),
        }
    )
    df["pb"] = df["yb"] ^ (rng.random(n) < 0.2)
    paths = {"csv": tmp_path / "preds.csv", "parquet": tmp_path / "preds.parquet"}
    df.to_csv(paths["csv"], index=False)
    df.to_parquet(paths["parquet"])
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "header.csv").write_text("y,p,g\n")
    (tmp_path / "garbled.csv").write_text('y,p\n1,"2\n')
    (tmp_path / "garbled.parquet").write_bytes(b"not parquet at all" * 4)
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "preds.xlsx").write_text("x")
    (tmp_path / "adir").mkdir()
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "notadb.db").write_text("hello, I am not SQLite")
    return df, tmp_path


@pytest.fixture(scope="module")
def compas_impact():
    df = load_compas()
    # "selected" = rated Low risk by COMPAS (score_text == "Low"), the favourable outcome
    df["low_risk"] = (df["score_text"] == "Low").astype(int)
    return df


@pytest.fixture(scope="module")
def pool_report():
    # s6 has true error rate 0 (so a rate-0 stratum) and a tiny share of the pool
    return make_pool_campaign_metrics(
        3000,
        6,
        rates=[0.02, 0.05, 0.1, 0.2, 0.3, 0.0],
        weights=[0.4, 0.3, 0.15, 0.1, 0.04, 0.01],
        random_seed=0,
    )


@pytest.fixture(scope="module")
def rep(pool_report):
    return evaluate(
        pool_report,
        y_true="y_true",
        y_pred="y_pred",
        strata="stratum",
        weights=WEIGHTS,
        target_halfwidth=0.05,
        random_seed=0,
    )


@pytest.fixture(scope="module")
def rep_report_flags_export():
    return evaluate(Counts.from_arrays([3, 5, 0], [40, 50, 30], strata=["a_1", "b&c", "d%"]), random_seed=0)


@pytest.fixture(scope="module")
def rep_report_read():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(Counts.from_arrays(S, N, strata=list("abcdefg")), random_seed=0, guarantee="average")


@pytest.fixture(params=["small_codes", "duckdb", "factorize"])
def path(request, monkeypatch):
    """Force one counting path (the small-code path declines columns it cannot count)."""
    monkeypatch.setattr(pandas_backend, "DUCKDB_MIN_ROWS", 0 if request.param == "duckdb" else 10**12)
    if request.param == "small_codes":
        monkeypatch.setattr(pandas_backend, "CHUNK_ROWS", 1000)  # several chunks on a small frame
    else:
        monkeypatch.setattr(pandas_backend, "small_code_counts", lambda series: None)
    return request.param
