"""Tests of ``bayeseval.campaign.labels.ingest``: a batch of labels or annotations is checked whole, then recorded
once (retries are no-ops, a different label needs ``relabel``), and a refused batch writes nothing.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayeseval._api.warnings import BlankLabelWarning
from bayeseval.campaign import Annotation, Campaign, Each
from tests.campaign.helpers import make_pool, new_campaign, oracle, truth_of
from tests.helpers import assert_counts_match_labels, make_pool_hardening_campaign, truth_of_hardening_campaign


@pytest.fixture
def labelled_campaign(tmp_path):
    pool = make_pool()
    c = Campaign.create(tmp_path / "c.db", pool, strata="g", y_pred="pred", random_seed=5)
    b = c.propose(20)
    c.ingest(oracle(b.iloc[:10]))
    yield c, pool, b
    c.close()


def _bad_cases(pool, b):
    pending = list(b.index[10:])
    labelled = list(b.index[:10])
    never = [r for r in pool.index if r not in set(b.index)][:2]
    return {
        "unknown": (pd.Series([1, 0], index=[pending[0], 999_999_999]), "not in the pool"),
        "never proposed": (pd.Series([1, 0], index=[pending[0], never[0]]), "never proposed"),
        "dup in batch": (pd.Series([1, 0], index=[pending[0], pending[0]]), "duplicate"),
        # a different label for a labelled row (the same label would be a no-op retry)
        "already labelled": (
            pd.Series([1, 1 - truth_of(labelled[0])], index=[pending[0], labelled[0]]),
            "already labelled",
        ),
        "nan label": (pd.Series([1.0, np.nan], index=pending[:2]), "missing labels"),
        "invalid label": (pd.Series([1, 7], index=pending[:2]), "invalid labels"),
        "string label": (pd.Series([1, "cat"], index=pending[:2], dtype=object), "invalid labels"),
    }


_LABEL_VALUES = st.one_of(
    st.sampled_from([0, 1, 1.0, 0.0, "1", "0", True, False, 2, -1, 0.5, 1.9, math.inf, "x", "", None, np.nan, pd.NA]),
    st.floats(allow_nan=True, allow_infinity=True),
)


def _acceptable(v):
    """Independent statement of the rule for the known labels [0, 1]."""
    if v is None or v is pd.NA:
        return False
    if isinstance(v, str):
        return v in ("0", "1")
    if isinstance(v, float) and math.isnan(v):
        return False
    return v in (0, 1)  # Python equality: 1.0 == 1, True == 1; 0.5, inf, 2 are not


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "case",
    ["unknown", "never proposed", "dup in batch", "already labelled", "nan label", "invalid label", "string label"],
)
def test_bad_ingest_changes_nothing(labelled_campaign, case):
    c, pool, b = labelled_campaign
    labels, message = _bad_cases(pool, b)[case]
    before = c._store.dump()
    with pytest.raises(ValueError, match=message) as err:
        c.ingest(labels, strict=case == "nan label")  # a blank label refuses the batch only when strict
    bad_id = {"unknown": 999_999_999, "already labelled": b.index[0]}.get(case)
    if bad_id is not None:
        assert repr(int(bad_id)) in str(err.value)
    assert c._store.dump() == before
    # and a good ingest still works afterwards
    assert c.ingest(oracle(b.iloc[10:12])) == 2


# PrecisionLimitedWarning expected: under the per-stratum guarantee (wider than the pooled
# interval) some strata of this pool cannot reach the default target
@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_ingest_float_labels_from_csv_are_accepted(labelled_campaign):
    c, pool, b = labelled_campaign
    assert c.ingest(pd.Series([1.0, 0.0], index=b.index[10:12])) == 2
    assert set(c.labels()["label"]) <= {0, 1}


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_majority_resolution_ties_stay_pending(tmp_path, pool_annotations):
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=5,
        annotation=Annotation(annotators=2),
    )
    b = c.propose(4)
    r0, r1, r2, r3 = b.index
    ann = pd.DataFrame(
        {
            "row": [r0, r0, r1, r1, r2, r3],
            "annotator": ["ana", "bo", "ana", "bo", "ana", "ana"],
            "label": [1, 1, 1, 0, 0, 1],
        }
    )
    res = c.ingest(ann, id_column="row", annotator_column="annotator")
    # r0 agreed (label 1); r1 tied 1-1: unresolved; r2, r3 have one annotation of the two needed
    assert (int(res), res.annotations, res.unresolved) == (1, 6, 3)
    assert c.labels()["label"].to_dict() == {r0: 1}
    assert set(c.pending.index) == {r1, r2, r3}
    # a third annotator breaks the tie 2-1
    res = c.ingest(
        pd.DataFrame({"row": [r1], "annotator": ["cy"], "label": [0]}), id_column="row", annotator_column="annotator"
    )
    assert int(res) == 1 and c.labels().loc[r1, "label"] == 0
    # a retry is a no-op; a changed annotation needs relabel
    assert c.ingest(ann, id_column="row", annotator_column="annotator").unchanged == 6
    with pytest.raises(ValueError, match=rf"annotator already gave a different label.*{r0}"):
        c.ingest(
            pd.DataFrame({"row": [r0], "annotator": ["ana"], "label": [0]}),
            id_column="row",
            annotator_column="annotator",
        )
    # plain ingest is refused: this campaign resolves from two annotations per row
    with pytest.raises(ValueError, match="annotator_column"):
        c.ingest(pd.Series([1], index=[r2]))
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "rule, expert", [("annotator:expert", "expert"), ("annotator:Expert@Lab.org", " expert@lab.ORG")]
)
def test_chosen_annotator_rule(tmp_path, pool_annotations, rule, expert):
    # the chosen annotator is compared by identity: an e-mail in any case and spacing
    c = Campaign.create(
        tmp_path / "c.db",
        pool_annotations,
        strata="region",
        y_pred="pred",
        random_seed=6,
        annotation=Annotation(resolve=rule),
    )
    b = c.propose(3)
    ann = pd.DataFrame(
        {"row": [b.index[0], b.index[0], b.index[1]], "who": ["crowd", expert, "crowd"], "label": [1, 0, 1]}
    )
    res = c.ingest(ann, id_column="row", annotator_column="who")
    assert int(res) == 1 and res.unresolved == 1 and c.labels()["label"].to_dict() == {b.index[0]: 0}
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "frame, match",
    [
        (lambda r: pd.DataFrame({"row": [r], "annotator": [None], "label": [1]}), "missing annotator for ids"),
        (lambda r: pd.DataFrame({"row": [r, r], "annotator": ["a", "a"], "label": [1, 0]}), "same annotator twice"),
        (lambda r: pd.DataFrame({"row": [r], "annotator": ["a"], "label": [7]}), "invalid labels"),
        (lambda r: pd.DataFrame({"row": [99999], "annotator": ["a"], "label": [1]}), "unknown ids.*99999"),
    ],
)
def test_bad_annotations_name_the_rows_and_write_nothing(tmp_path, pool_annotations, frame, match):
    c = Campaign.create(tmp_path / "c.db", pool_annotations, strata="region", y_pred="pred", random_seed=7)
    b = c.propose(2)
    before = c._store.dump()
    with pytest.raises(ValueError, match=match):
        c.ingest(frame(b.index[0]), id_column="row", annotator_column="annotator")
    assert c._store.dump() == before
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_fractional_labels_are_refused_with_the_row_ids(tmp_path):
    c, _ = new_campaign(tmp_path)
    b = c.propose(6)
    before = c._store.dump()
    with pytest.raises(ValueError, match="invalid labels") as err:
        c.ingest(pd.Series([0.5, 1.9, -0.7], index=b.index[:3]))
    for rid in b.index[:3]:
        assert repr(int(rid)) in str(err.value)
    assert c._store.dump() == before  # nothing stored (atomic)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@pytest.mark.parametrize(
    "bad, kind",
    [
        (math.inf, "invalid"),
        (-math.inf, "invalid"),
        (2, "invalid"),  # an integer outside the known labels
        ("cat", "invalid"),
        ("1.5", "invalid"),
        (b"1", "invalid"),
        (None, "missing"),
        (np.nan, "missing"),
        (pd.NA, "missing"),
    ],
)
def test_every_non_label_is_refused_and_nothing_is_stored(tmp_path, bad, kind):
    c, _ = new_campaign(tmp_path)
    b = c.propose(4)
    before = c._store.dump()
    labels = pd.Series([1, bad, 0], index=b.index[:3], dtype=object)
    with pytest.raises(ValueError, match=kind) as err:
        c.ingest(labels, strict=True)  # strict: a missing label refuses the batch too
    assert repr(int(b.index[1])) in str(err.value)
    assert c._store.dump() == before
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(_LABEL_VALUES, min_size=1, max_size=4))
def test_property_ingest_is_exact_or_refuses_everything(tmp_path_factory, values):
    path = tmp_path_factory.mktemp("prop") / "c.db"
    pool = make_pool_hardening_campaign(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(len(values))
    ids = b.index[: len(values)]
    ok = [_acceptable(v) for v in values]
    before = c._store.dump()
    if all(ok):
        assert c.ingest(pd.Series(values, index=ids, dtype=object), strict=True) == len(values)
        expected = [int(v) for v in values]
        assert c.labels()["label"].reindex(ids).tolist() == expected
        assert_counts_match_labels(c, pool)
    else:
        with pytest.raises(ValueError) as err:
            c.ingest(pd.Series(values, index=ids, dtype=object), strict=True)
        for rid, good in zip(ids, ok, strict=True):
            if not good:
                assert repr(int(rid)) in str(err.value)
        assert c._store.dump() == before
        _check_lenient_ingest(c, pool, ids, values, ok)
    c.close()


def _blank_value(v):
    """Independent statement of a blank label: None, NA, NaN, or text of spaces only."""
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _check_lenient_ingest(c, pool, ids, values, ok):
    """Without strict: blank labels stay pending and the rest is recorded, or the batch is refused whole."""
    blank = [_blank_value(v) for v in values]
    before = c._store.dump()
    if all(g or b for g, b in zip(ok, blank, strict=True)):
        with pytest.warns(BlankLabelWarning, match=f"^{sum(blank)} row"):
            r = c.ingest(pd.Series(values, index=ids, dtype=object))
        assert (int(r), r.blank) == (sum(ok), sum(blank))
        labelled = [rid for rid, g in zip(ids, ok, strict=True) if g]
        assert sorted(c.labels().index) == sorted(labelled)
        assert set(ids) - set(labelled) <= set(c.pending.index)
        assert_counts_match_labels(c, pool)
    else:
        with pytest.raises(ValueError):
            c.ingest(pd.Series(values, index=ids, dtype=object))
        assert c._store.dump() == before


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_resending_labels_is_a_no_op_and_reports_new_vs_present(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(10)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    assert c.ingest(truth.iloc[:6]) == 6
    dump = c._store.dump()
    r = c.ingest(truth.iloc[:6].astype(float))  # the same labels, written as 1.0/0.0
    assert (int(r), r.new, r.unchanged, r.relabelled) == (0, 0, 6, 0)
    assert c._store.dump() == dump
    r = c.ingest(truth)  # a retry of the whole file after a crash: only the last 4 are new
    assert (r.new, r.unchanged) == (4, 6)
    assert c.labels_used == 10
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_a_different_label_is_refused_unless_relabel(tmp_path):
    c, pool = new_campaign(tmp_path)
    b = c.propose(6)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    c.ingest(truth)
    flipped = 1 - truth.iloc[[1, 4]]
    dump = c._store.dump()
    with pytest.raises(ValueError, match="already labelled with a different label") as err:
        c.ingest(flipped)
    assert repr(int(b.index[1])) in str(err.value) and repr(int(b.index[4])) in str(err.value)
    assert c._store.dump() == dump
    r = c.ingest(flipped, relabel=True)
    assert (r.new, r.relabelled) == (0, 2)
    assert c.labels()["label"].reindex(b.index).tolist() == [
        *truth.iloc[:1],
        *flipped.iloc[:1],
        *truth.iloc[2:4],
        *flipped.iloc[1:],
        *truth.iloc[5:],
    ]
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
def test_relabel_corrects_recall_trials(tmp_path):
    c, pool = new_campaign(tmp_path, metric="recall")
    b = c.propose(20)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    c.ingest(truth)
    new = 1 - truth
    c.ingest(new, relabel=True)
    pred = pool.loc[b.index, "pred"]
    g = pool.loc[b.index, "g"]
    st_ = c.status()
    assert (st_["trials"].reindex(sorted(set(g))) == new.eq(1).groupby(g).sum()).all()
    assert (st_["successes"].reindex(sorted(set(g))) == (new.eq(1) & pred.eq(1)).groupby(g).sum()).all()
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(subsets=st.lists(st.lists(st.integers(0, 14), min_size=1, max_size=15, unique=True), min_size=1, max_size=5))
def test_property_repeated_ingests_count_each_row_once(tmp_path_factory, subsets):
    path = tmp_path_factory.mktemp("idem") / "c.db"
    pool = make_pool_hardening_campaign(n=80, k=3)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(15)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    seen: set[int] = set()
    for positions in subsets:
        ids = b.index[positions]
        r = c.ingest(truth.loc[ids])
        new = set(ids) - seen
        assert (r.new, r.unchanged) == (len(new), len(ids) - len(new))
        seen |= set(ids)
    assert c.labels_used == len(seen) and int(c.status()["pending"].sum()) == 15 - len(seen)
    assert_counts_match_labels(c, pool)
    c.close()


@pytest.mark.filterwarnings("ignore::bayeseval.PrecisionLimitedWarning")
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(range(8))), as_frame=st.booleans())
def test_property_labels_are_paired_by_row_id_not_position(tmp_path_factory, order, as_frame):
    path = tmp_path_factory.mktemp("align") / "c.db"
    pool = make_pool_hardening_campaign(n=60, k=2)
    c = Campaign.create(path, pool, strata="g", y_pred="pred", random_seed=0, goal=Each(0.01))
    b = c.propose(8)
    truth = pd.Series([truth_of_hardening_campaign(r) for r in b.index], index=b.index)
    shuffled = truth.iloc[list(order)]
    if as_frame:
        c.ingest(pd.DataFrame({"id": shuffled.index, "label": shuffled.to_numpy()}), id_column="id")
    else:
        c.ingest(shuffled)
    assert (c.labels()["label"].reindex(b.index) == truth).all()
    assert_counts_match_labels(c, pool)
    c.close()
