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


# -- the complete command line -----------------------------------------------------------------
SUBCOMMANDS = ["create", "propose", "ingest", "status", "pending", "release", "export", "forecast", "history", "report"]


@pytest.fixture
def labelled_db(tmp_path, pool_csv, capsys):
    path, pool = pool_csv
    db = str(tmp_path / "c.db")
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db, "--seed", "1", "--costs", "north=3"]) == 0
    out = tmp_path / "b.csv"
    assert main(["campaign", "propose", "--db", db, "--batch-size", "24", "--out", str(out)]) == 0
    batch = pd.read_csv(out)
    batch["label"] = pool.loc[batch["id"], "truth"].to_numpy()
    batch.to_csv(out, index=False)
    assert main(["campaign", "ingest", "--db", db, "--labels", str(out)]) == 0
    assert main(["campaign", "propose", "--db", db, "--batch-size", "6", "--out", str(tmp_path / "b2.csv")]) == 0
    capsys.readouterr()
    return db, pool


def test_every_subcommand_has_json_and_no_none_default_in_help(capsys):
    for cmd in SUBCOMMANDS:
        assert main(["campaign", cmd, "--help"]) == 0
        text = capsys.readouterr().out
        assert "--json" in text and "(default: None)" not in text, cmd


def test_status_json_shows_what_status_shows(labelled_db, capsys):
    db, _ = labelled_db
    assert main(["campaign", "status", "--db", db, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    with Campaign.open(db) as c:
        st = c.status()
        forecast = c.forecast(cost=True)
    rows = {r["stratum"]: r for r in payload["strata"]}
    for col in st.columns:
        for stratum in st.index:
            got, want = rows[stratum][col], st.loc[stratum, col]
            assert got == pytest.approx(want) if isinstance(got, float) else got == want, (col, stratum)
    costs = pd.Series(1.0, index=st.index)
    costs["north"] = 3.0
    assert payload["cost"] == pytest.approx(float((st["labelled"] * costs).sum()))
    assert payload["forecast"] == int(forecast["labels"].sum())
    assert payload["forecast_cost"] == pytest.approx(float(forecast["cost"].sum()))
    assert main(["campaign", "status", "--db", db]) == 0
    text = capsys.readouterr().out
    assert all(col in text for col in ["pool_rows", "exhausted", "outlier", "cost", "forecast"])


def test_forecast_history_pending_release_json(labelled_db, capsys):
    db, _ = labelled_db
    assert main(["campaign", "forecast", "--db", db, "--json"]) == 0
    f = json.loads(capsys.readouterr().out)
    assert f["cost"] == pytest.approx(sum(r["labels"] * r["cost_per_label"] for r in f["strata"]))
    assert main(["campaign", "history", "--db", db, "--json"]) == 0
    h = json.loads(capsys.readouterr().out)
    assert [r["round"] for r in h["rounds"]] == [1, 2]
    assert sum(h["rounds"][0]["allocation"].values()) == 24 and sum(h["rounds"][1]["allocation"].values()) == 6
    assert main(["campaign", "pending", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending"] == 6
    assert main(["campaign", "release", "--db", db, "--all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"db": db, "released": 6, "pending": 0}


def test_report_writes_html_with_inline_plots(labelled_db, tmp_path, capsys):
    db, _ = labelled_db
    out = tmp_path / "r.html"
    assert main(["campaign", "report", "--db", db, "--out", str(out)]) == 0
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 2
    assert "Progress over rounds" in html and "labels still needed" in html
    with Campaign.open(db) as c:
        need = int(c.forecast().sum())
    assert f"<b>labels still needed</b>: {need}" in html
    assert main(["campaign", "report", "--db", db, "--out", str(tmp_path / "r.txt")]) == 2
    assert "--out" in capsys.readouterr().err


def test_create_on_an_existing_file_speaks_to_the_command_line(labelled_db, pool_csv, capsys):
    db, _ = labelled_db
    path, _ = pool_csv
    assert main(["campaign", "create", "--pool", str(path), "--id-column", "id", "--strata", "region",
                 "--y-pred", "pred", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and db in err and "Campaign.open" not in err


def test_format_must_match_the_file_name(labelled_db, tmp_path, capsys):
    db, _ = labelled_db
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "t.csv"), "--format", "labelstudio"]) == 2
    assert "--format labelstudio writes a .json file" in capsys.readouterr().err
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "t.json")]) == 0
    tasks = json.loads((tmp_path / "t.json").read_text())
    assert len(tasks) == 6 and all("pred" not in t["data"] for t in tasks)
    assert main(["campaign", "export", "--db", db, "--out", str(tmp_path / "p.json"), "--show-prediction"]) == 0
    assert all("pred" in t["data"] for t in json.loads((tmp_path / "p.json").read_text()))
