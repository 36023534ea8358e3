"""Tests of ``bayeseval campaign create|propose|ingest|status``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayeseval.active import Campaign
from bayeseval.active.cli import main


@pytest.fixture
def pool_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 600
    pool = pd.DataFrame(
        {
            "id": [f"x{i}" for i in range(n)],
            "region": rng.choice(["north", "south", "east"], n),
            "pred": rng.integers(0, 2, n),
            "truth": rng.integers(0, 2, n),
        }
    )
    path = tmp_path / "pool.csv"
    pool.to_csv(path, index=False)
    return path, pool.set_index("id")


def test_full_cli_cycle(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = tmp_path / "c.db"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", str(db), "--seed", "1", "--target-halfwidth", "0.2"]) == 0
    out = tmp_path / "batch.csv"
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "30", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    assert len(batch) == 30 and {"id", "region", "label"} <= set(batch.columns)
    assert "pred" not in batch.columns  # annotators do not see the model's prediction by default
    assert batch["label"].isna().all()
    # the labelling team fills the label column
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", str(db), "--labels", str(out)]) == 0
    capsys.readouterr()
    assert main(["campaign", "status", "--db", str(db), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["labels_used"] == 30
    strata = {r["stratum"]: r for r in payload["strata"]}
    sub = pool.loc[batch["id"]]
    errors = (sub["truth"] != sub["pred"]).groupby(sub["region"]).sum()
    for region, e in errors.items():
        assert strata[region]["successes"] == e
    # the same through the Python API
    c = Campaign.open(db)
    assert c.labels_used == 30 and set(c.labels().index) == set(batch["id"])
    c.close()


def test_bad_input_exits_2_with_one_line(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = tmp_path / "c.db"
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "nope",
                 "--y-pred", "pred", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "nope" in err
    assert not db.exists()
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", str(db), "--seed", "2"]) == 0
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", str(db), "--batch-size", "5", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = [0, 1, 1, 3, 0]  # 3 is not a valid label
    batch.to_csv(out, index=False)
    capsys.readouterr()
    assert main(["campaign", "ingest", "--db", str(db), "--labels", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "invalid labels" in err and "3" in err and err.count("\n") == 0
    c = Campaign.open(db)
    assert c.labels_used == 0
    c.close()
    assert main(["campaign", "status", "--db", str(tmp_path / "missing.db")]) == 2


def test_module_entry_point_parquet(tmp_path, pool_csv):
    path, pool = pool_csv
    pq = tmp_path / "pool.parquet"
    pool.reset_index().to_parquet(pq)
    db = tmp_path / "c.db"
    run = [sys.executable, "-m", "bayeseval.active.cli", "campaign"]
    r = subprocess.run(run + ["create", "--pool", str(pq), "--id-column", "id", "--strata", "region",
                              "--y-pred", "pred", "--db", str(db)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(run + ["propose", "--db", str(db), "--batch-size", "12", "--out", str(tmp_path / "b.parquet")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(tmp_path / "b.parquet")) == 12
