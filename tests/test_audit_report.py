"""The report's "Fairness audit" section: data (audit, findings) and its renderings.

References: the audit called directly (:func:`bayeseval.fairness`) on the same rows, and
constructed groups whose verdicts are known (rates 0.2 and 0.6 on 500 rows each are decided
outside a tolerance of 0.1; equal rates on 1,000 rows each are decided within 0.2).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bayeseval import Counts, audit, evaluate
from bayeseval.cli.main import main


def _rows(spec) -> pd.DataFrame:
    """Rows with y_pred = 1 for ``s`` of ``n`` per (race, sex) cell; y_true alternates."""
    rows = []
    for (race, sex), (s, n) in spec.items():
        for i in range(n):
            rows.append((race, sex, i % 2, int(i < s)))
    return pd.DataFrame(rows, columns=["race", "sex", "y", "p"])


APART = {("<a>", "f"): (100, 500), ("<a>", "m"): (100, 500),
         ("b", "f"): (300, 500), ("b", "m"): (300, 500)}
ALIKE = {("x", "f"): (300, 1000), ("x", "m"): (300, 1000),
         ("y", "f"): (300, 1000), ("y", "m"): (300, 1000)}


def _report(spec, **kw):
    return evaluate(_rows(spec), y_true="y", y_pred="p", strata="race", random_seed=0, **kw)


@pytest.fixture(scope="module")
def apart():
    return _report(APART, groups=["race", "sex"], tolerance=0.1)


def test_report_audit_is_the_audit_of_the_same_rows(apart):
    rep = apart
    direct = audit(_rows(APART), y_true="y", y_pred="p", groups=["race", "sex"],
                   metrics=["selection_rate", "tpr", "fpr", "ppv"], tolerance=0.1, random_seed=0)
    assert rep.audit.model == "crossed"
    pd.testing.assert_frame_equal(rep.audit.verdicts, direct.verdicts)
    cols = ["group", "metric", "successes", "trials", "rate", "adaptive_lower", "pooled_mean"]
    pd.testing.assert_frame_equal(rep.audit.groups[cols], direct.groups[cols])
    # selection rates 0.2 and 0.6 on 500 rows each: demographic parity is decided outside 0.1
    verdicts = rep.audit.verdicts.set_index("criterion")["verdict"]
    assert verdicts["demographic_parity"] == "outside"
    found = [f for f in rep.findings if f.flag == "fairness" and f.severity == "warning"]
    assert any("demographic_parity is outside the tolerance 0.1" in f.message for f in found)
    assert [f.message for f in found] == [w for w in rep.warnings if w.startswith("Fairness:")]


def test_alike_groups_give_no_fairness_warning():
    rep = _report(ALIKE, groups=["race", "sex"], tolerance=0.2)
    assert set(rep.audit.verdicts["verdict"]) == {"within tolerance"}
    assert not [w for w in rep.warnings if w.startswith("Fairness")]


def test_html_section_tables_escape_and_plot(apart):
    rep = apart
    page = rep.to_html(plot=True)
    section = page[page.index("<section class='bv-audit'>"):]
    assert "<h3>Fairness audit</h3>" in section
    assert "&lt;a&gt; | f" in section and "<a> | f" not in section
    assert "pooled model: crossed factors" in section
    for title in ("<b>Verdicts</b>", "<b>Disparities</b>", "<b>Groups</b>"):
        assert title in section
    n_verdicts = len(rep.audit.verdicts)
    assert section.count("<tr class=flag><td class=s>demographic_parity") == 1
    assert section.count("<td class=s>equalized_odds") == 2 and n_verdicts == 5
    assert "alt='forest plot of the disparities' src='data:image/png;base64," in section
    assert "<img" not in rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert "Fairness audit:" in str(rep) and "## Fairness audit" in rep.to_markdown()


def test_empty_cell_is_a_labelled_prediction_in_the_section():
    spec = dict(APART)
    spec[("b", "m")] = (0, 0)
    rep = _report(spec, groups=["race", "sex"])
    section = rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert section.count("prediction, no data") == 4      # one difference per metric
    row = rep.audit.groups.set_index(["group", "metric"]).loc[("b | m", "tpr")]
    assert row["predicted"] and np.isfinite(row["pooled_mean"])
    assert f"{row['pooled_mean']:.3f} (predicted)" in section


def test_plot_is_omitted_beyond_eighty_rows():
    spec = {(f"r{i}", s): (10 + i, 60) for i in range(12) for s in ("f", "m")}
    rep = _report(spec, groups=["race", "sex"])
    rows = int((rep.audit.disparities["measure"] != "ratio").sum())
    assert rows == 4 * 24   # 23 differences and one gap per metric
    assert f"(disparity plot omitted: {rows} rows are more than 80" in rep.to_html(plot=True)


def test_json_carries_the_audit_or_none():
    rep = _report({k: v for k, v in APART.items() if k[1] == "f"}, groups="race", tolerance=0.1,
                  min_trials=5)
    got = json.loads(json.dumps(rep.to_dict()))
    assert got["audit"]["model"] == "robust" and got["audit"]["min_trials"] == 5
    assert [v["verdict"] for v in got["audit"]["verdicts"]][0] == "outside"
    assert json.loads(json.dumps(_report(APART).to_dict()))["audit"] is None


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"tolerance": 0.1}, TypeError, "tolerance applies to the fairness audit.*tolerance=0.1"),
        ({"min_trials": 5}, TypeError, "min_trials applies to the fairness audit.*min_trials=5"),
        ({"groups": "race", "tolerance": 1.5}, ValueError, r"tolerance must be in \(0, 1\), got 1.5"),
        ({"groups": []}, ValueError, r"groups must name at least one column, got \[\]"),
    ],
)
def test_bad_audit_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _report(APART, **kwargs)


def test_groups_need_rows_not_counts():
    counts = Counts.from_arrays([3, 5], [40, 50], strata=["a", "b"])
    with pytest.raises(TypeError, match="groups .*needs one row per example.*groups='g'"):
        evaluate(counts, groups="g", random_seed=0)


def test_report_command_adds_the_audit(tmp_path, capsys):
    path = tmp_path / "p.csv"
    _rows(APART).to_csv(path, index=False)
    out = tmp_path / "r.html"
    code = main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--strata", "race",
                 "--groups", "race,sex", "--tolerance", "0.1", "--out", str(out), "--json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and got["audit"]["model"] == "crossed"
    assert "<h3>Fairness audit</h3>" in out.read_text()
    assert main(["report", str(path), "--y-true", "y", "--y-pred", "p", "--groups", "nope"]) == 2
    assert "--groups column 'nope' is not in" in capsys.readouterr().err


def test_unmeasured_criterion_is_a_warning_and_shown_as_not_measured():
    # 40 rows per cell: TPR, FPR and PPV have 20 or fewer trials per cell, under the default 30
    spec = {("a", "f"): (4, 40), ("a", "m"): (4, 40), ("b", "f"): (36, 40), ("b", "m"): (36, 40)}
    rep = _report(spec, groups=["race", "sex"], tolerance=0.1)
    verdicts = rep.audit.verdicts.set_index("criterion")["verdict"]
    assert verdicts["equal_opportunity"] == "not measured"
    assert verdicts["demographic_parity"] == "outside"  # 40 rows per cell: measured
    found = [w for w in rep.warnings if "equal_opportunity is not measured" in w]
    assert len(found) == 1 and "tpr" in found[0]
    assert "equal_opportunity (tpr): gap not measured -> not measured" in str(rep)
    section = rep.to_html(plot=False).split("<section class='bv-audit'>")[1]
    assert "<tr class=flag><td class=s>equal_opportunity</td><td class=s>tpr</td><td>not measured" in section


# -- Audit.save and bayeseval audit --out --------------------------------------------------------


def _saved_audit():
    df = pd.DataFrame({
        "y": [1, 0] * 150,
        "p": ([1, 0] * 60 + [0, 0] * 15) + ([1, 0] * 40 + [1, 1] * 35),
        "g": ["=HYPERLINK(\"http://x\",\"y\")"] * 150 + ["b | c"] * 150,
    })
    return df, audit(df, y_true="y", y_pred="p", groups="g", metrics=["tpr", "fpr"],
                     tolerance=0.1, random_seed=0)


def test_audit_xlsx_keeps_every_text_cell_as_text(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    _, res = _saved_audit()
    book = openpyxl.load_workbook(res.save(tmp_path / "a.xlsx"))
    assert book.sheetnames == ["verdicts", "disparities", "groups", "labels_needed", "notes"]
    sheet = book["groups"]
    header = [c.value for c in sheet[1]]
    col = header.index("g") + 1
    cells = [sheet.cell(row=r, column=col) for r in range(2, sheet.max_row + 1)]
    assert {c.value for c in cells} == {'=HYPERLINK("http://x","y")', "b | c"}
    assert all(c.data_type == "s" for c in cells)
    trials = [sheet.cell(row=r, column=header.index("trials") + 1).value for r in range(2, sheet.max_row + 1)]
    # hand count: 75 positives and 75 negatives per group, for tpr then fpr
    assert sorted(trials) == [75, 75, 75, 75]


def test_audit_csv_neutralises_formulas_and_json_round_trips(tmp_path):
    _, res = _saved_audit()
    text = res.save(tmp_path / "a.csv").read_text()
    assert "'=HYPERLINK" in text and "\n=HYPERLINK" not in text
    data = json.loads(res.save(tmp_path / "a.json").read_text())
    assert data["verdicts"][0]["verdict"] == res.verdicts["verdict"].iloc[0]
    assert len(data["groups"]) == len(res.groups)
    with pytest.raises(ValueError, match=r"path must end in .*\.xlsx.*a\.pdf'"):
        res.save(tmp_path / "a.pdf")


def test_audit_html_and_markdown_carry_the_tables(tmp_path):
    from bs4 import BeautifulSoup

    _, res = _saved_audit()
    soup = BeautifulSoup(res.save(tmp_path / "a.html").read_text(), "html.parser")
    assert soup.title.string == "Fairness audit"
    text = soup.get_text(" ")
    assert "equal_opportunity" in text and "b | c" in text
    assert soup.find("img") is not None  # the forest plot inline
    assert not soup.find_all("script", src=True) and not soup.find_all("link", href=True)
    md = res.save(tmp_path / "a.md").read_text()
    assert md.startswith("# Fairness audit") and "## Verdicts" in md and "b &#124; c" in md


def test_audit_command_out_never_replaces_its_data_or_a_file_without_force(tmp_path, capsys):
    from bayeseval.cli.main import main

    df, _ = _saved_audit()
    data = tmp_path / "preds.csv"
    df.to_csv(data, index=False)
    args = ["audit", str(data), "--y-true", "y", "--y-pred", "p", "--groups", "g", "--metrics", "tpr"]
    before = data.read_bytes()
    assert main([*args, "--out", str(data), "--force"]) == 2
    assert data.read_bytes() == before and "data" in capsys.readouterr().err
    out = tmp_path / "audit.html"
    out.write_text("mine")
    assert main([*args, "--out", str(out)]) == 2
    assert "--force" in capsys.readouterr().err and out.read_text() == "mine"
    assert main([*args, "--out", str(out), "--force"]) == 0
    assert "Fairness audit" in out.read_text() and str(out) in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "a.pdf")]) == 2
