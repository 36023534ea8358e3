"""Demo: each section holds its own plots, steps print their own times, every file is named."""

from __future__ import annotations

import contextlib
import io
import re
import time

import pytest
from sklearn.metrics import accuracy_score

from bayeseval import demo as demo_module
from bayeseval.demo import _Demo, _Progress, _write_report, german_credit_predictions, run_demo


class _FakeReport:
    def save(self, path):
        path.write_text("# report\n")
        return path


@pytest.mark.slow
def test_demo_reports_the_same_accuracy_and_the_split_decisions(demo_summary):
    summary, _ = demo_summary
    df = german_credit_predictions(random_seed=0)
    assert summary["german_credit"]["accuracy"] == pytest.approx(accuracy_score(df["good_credit"], df["predicted"]))
    groups = summary["german_credit"]["per_group"]
    assert sum(g["trials"] for g in groups) == 1000
    for g in groups:
        assert g["lower"] <= g["rate"] <= g["upper"]
    plan = summary["planning"]
    # n_min 323 at 0.42% grows the test set to about 76,900 rows; 8 groups degrade
    assert plan["fraud_split"] == "grow_test"
    assert abs(plan["fraud_split_test_rows"] - 76_905) <= 5
    assert plan["fraud_split_8_groups"] == "degraded"


def test_progress_prints_each_steps_own_time(capsys, monkeypatch):
    # start; step 1 starts at 0; step 1 ends and step 2 starts at 2.0; step 2 ends at 2.5;
    # the total is read at 7.5
    clock = iter([0.0, 0.0, 2.0, 2.0, 2.5, 7.5])
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    progress = _Progress(2)
    progress("first")
    progress("second")  # step 1 ran from 0 to 2.0 s
    progress.done()  # step 2 ran from 2.0 to 2.5 s; total 7.5 s
    out = capsys.readouterr().out
    assert "[1/2] first" in out and "[2/2] second" in out
    assert "(step 1 took 2.0 s)" in out and "(step 2 took 0.5 s)" in out
    assert progress.times == [2.0, 0.5]
    assert "all 2 steps took 7.5 s" in out


def test_sections_hold_their_own_figures_and_every_file_is_listed(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    d = _Demo(random_seed=0, quick=True, quiet=True)
    d.section("<h2>One</h2>", d.figure("plot of one", lambda ax: ax.plot([0, 1])))
    d.section("<h2>Two</h2>", "<p>no plot</p>")
    d.section("<h2>Three</h2>", d.figure("plot of three", lambda ax: ax.plot([1, 0])))
    _write_report(d, tmp_path, _FakeReport())
    text = (tmp_path / "report.html").read_text()
    sections = re.findall(r"<section>(.*?)</section>", text, flags=re.S)
    assert [re.search(r"<h2>(\w+)</h2>", s).group(1) for s in sections] == ["One", "Two", "Three"]
    assert [re.findall(r"<figcaption>([^<]*)</figcaption>", s) for s in sections] == [
        ["plot of one"],
        [],
        ["plot of three"],
    ]
    assert [str(p) for p, _ in d.files] == [str(tmp_path / "report.html"), str(tmp_path / "german_credit.md")]
    assert all(p.exists() for p, _ in d.files)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["german_credit.md", "report.html"]
    assert d.summary["files"] == [str(p) for p, _ in d.files]


@pytest.mark.slow
def test_demo_run_lists_every_file_it_wrote_and_groups_plots(tmp_path):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert demo_module.run_demo(tmp_path, quick=True) == 0
    out = buf.getvalue()
    written = sorted(x.name for x in tmp_path.iterdir())
    listed = re.findall(r"^  (\S+)  \(", out.split("files written:")[1], flags=re.M)
    assert sorted(p.rsplit("/", 1)[-1] for p in listed) == written
    assert len(re.findall(r"\(step \d took [\d.]+ s\)", out)) == 6
    text = (tmp_path / "report.html").read_text()
    sections = re.findall(r"<section>(.*?)</section>", text, flags=re.S)
    compas = next(s for s in sections if "COMPAS" in s)
    campaign = next(s for s in sections if "campaign" in s)
    assert "Posterior predictive check (COMPAS)" in compas
    assert "Posterior predictive check" not in campaign and "Allocation of" not in campaign


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        ({"out": "FILE"}, ValueError, ["out", "a_file"]),
        ({"random_seed": -1}, ValueError, ["random_seed", "-1"]),
        ({"random_seed": 2**32}, ValueError, ["random_seed", str(2**32)]),
        ({"random_seed": "0"}, TypeError, ["random_seed", "'0'"]),
        ({"quick": "yes"}, TypeError, ["quick", "'yes'"]),
        ({"out": 3}, TypeError, ["out", "3"]),
    ],
)
def test_run_demo_checks_its_arguments_first(files, kwargs, exc, words):
    _, tmp = files
    if kwargs.get("out") == "FILE":
        kwargs = {"out": tmp / "a_file"}
    kwargs.setdefault("out", tmp / "demo-out")
    with pytest.raises(exc) as info:
        run_demo(**kwargs)
    for word in words:
        assert word in str(info.value)
    assert not (tmp / "demo-out").exists()  # nothing was done
