"""The results protocol: ``table``, ``to_frame()``, ``_repr_html_`` and ``__repr__``."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from bayeseval._api.results import Result
from tests.helpers import _close_figures  # noqa: F401

matplotlib.use("Agg")


class _Rates(Result):
    title = "Rates <per stratum>"

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    @property
    def table(self) -> pd.DataFrame:
        return self._frame


def test_to_frame_is_a_copy_of_the_table():
    frame = pd.DataFrame({"rate": [0.1, 0.25]}, index=pd.Index(["a", "b"], name="stratum"))
    result = _Rates(frame)
    out = result.to_frame()
    pd.testing.assert_frame_equal(out, frame)
    out.loc["a", "rate"] = 0.9
    assert result.table.loc["a", "rate"] == 0.1


def test_html_escapes_title_and_cells():
    frame = pd.DataFrame({"rate": [0.1]}, index=pd.Index(["<script>x</script>"], name="stratum"))
    html = _Rates(frame)._repr_html_()
    assert "<script>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "Rates &lt;per stratum&gt;" in html


def test_repr_names_the_result_and_shows_the_rows():
    frame = pd.DataFrame({"rate": [0.1, 0.25]}, index=pd.Index(["a", "b"], name="stratum"))
    text = repr(_Rates(frame))
    assert text.splitlines()[0] == "Rates <per stratum>"
    assert "0.25" in text and "b" in text


def test_a_result_without_a_table_says_so():
    class Empty(Result):
        pass

    with pytest.raises(NotImplementedError, match="Empty"):
        Empty().to_frame()


def test_a_dataclass_result_can_store_its_table_in_a_field():
    from dataclasses import dataclass, field

    @dataclass(frozen=True, repr=False)
    class Plan(Result):
        table: pd.DataFrame = field()
        level: float = 0.95

    frame = pd.DataFrame({"n": [3]})
    plan = Plan(table=frame)
    pd.testing.assert_frame_equal(plan.to_frame(), frame)
    assert repr(plan).splitlines()[0] == "Plan"


def test_a_dataclass_field_can_be_the_table():
    from dataclasses import dataclass

    @dataclass(repr=False)
    class Rates(Result):
        table: pd.DataFrame
        level: float

    r = Rates(pd.DataFrame({"rate": [0.25]}), 0.9)
    assert r.to_frame()["rate"].tolist() == [0.25] and r.level == 0.9

    class Missing(Result):
        pass

    with pytest.raises(NotImplementedError, match="Missing"):
        Missing().to_frame()
