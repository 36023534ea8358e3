"""The Guarantee objects: names, equality, conversion at the entry points, stop levels and bounds.

References: the closed form of the stop level, Clopper-Pearson from
``scipy.stats.binomtest(...).proportion_ci(method="exact")``, the exact coverage of the
stratum guarantee's interval by enumeration over the binomial (``scipy.stats.binom``), and the
defining mixture martingale of the confidence sequence (``scipy.special.betaln``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import special, stats

import bayeseval
from bayeseval._kernels.anytime import planned_trials, tuned_concentration
from bayeseval._kernels.guarantee import GUARANTEES, Guarantee, as_guarantee

ALL = (Guarantee.stratum(), Guarantee.average(), Guarantee.anytime())


def _exact(s, n, level):
    ci = stats.binomtest(int(s), int(n)).proportion_ci(confidence_level=level, method="exact")
    return ci.low, ci.high


# -- what each one is ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("guarantee", "name", "per_stratum", "sequential", "scope", "read"),
    [
        (Guarantee.stratum(), "stratum", True, False, "stratum", "guaranteed"),
        (Guarantee.average(), "average", False, False, "average", "pooled"),
        (Guarantee.anytime(), "anytime", True, True, "stratum", "anytime"),
    ],
)
def test_each_constructor_knows_its_name_and_what_it_promises(guarantee, name, per_stratum, sequential, scope, read):
    assert (guarantee.name, guarantee.per_stratum, guarantee.sequential) == (name, per_stratum, sequential)
    assert (guarantee.scope, guarantee.read) == (scope, read)
    assert guarantee == Guarantee(name) == Guarantee(name.upper())  # by name, any case
    assert repr(guarantee) == f"Guarantee.{name}()" and eval(repr(guarantee), {"Guarantee": Guarantee}) == guarantee


def test_guarantees_are_equal_by_name_hashable_and_frozen():
    assert len(set(ALL)) == 3 and len({Guarantee("stratum"), Guarantee.stratum()}) == 1
    assert Guarantee.stratum() != Guarantee.anytime() and Guarantee.stratum() != "stratum"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Guarantee.stratum().name = "average"
    assert bayeseval.Guarantee is Guarantee and "Guarantee" in bayeseval.__all__


@pytest.mark.parametrize(
    ("value", "error"), [("each", ValueError), ("", ValueError), (1, TypeError), (None, TypeError)]
)
def test_a_bad_name_is_refused_naming_guarantee_and_the_value(value, error):
    with pytest.raises(error, match="guarantee") as err:
        Guarantee(value)
    assert repr(value) in str(err.value) and "['stratum', 'average', 'anytime']" in str(err.value)


# -- the one conversion at the entry points -------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "anytime", "expected"),
    [
        ("stratum", False, "stratum"),
        ("average", False, "average"),
        ("anytime", False, "anytime"),
        ("Stratum", False, "stratum"),
        (Guarantee.average(), False, "average"),
        (Guarantee.anytime(), False, "anytime"),
        ("stratum", True, "anytime"),  # the older keyword
        (Guarantee.stratum(), True, "anytime"),
        ("anytime", True, "anytime"),
    ],
)
def test_as_guarantee_accepts_names_objects_and_the_anytime_keyword(value, anytime, expected):
    assert as_guarantee(value, anytime=anytime) is getattr(Guarantee, expected)()


@pytest.mark.parametrize(
    ("value", "anytime", "allowed", "error", "words"),
    [
        ("both", False, GUARANTEES, ValueError, ["guarantee", "'both'", "['stratum', 'average']"]),
        ("anytime", False, GUARANTEES, ValueError, ["guarantee", "'anytime'", "['stratum', 'average']"]),
        (Guarantee.anytime(), False, GUARANTEES, ValueError, ["guarantee", "Guarantee.anytime()"]),
        (0.5, False, GUARANTEES, TypeError, ["guarantee", "0.5", "['stratum', 'average']"]),
        ("each", False, ("stratum", "average", "anytime"), ValueError, ["guarantee", "'each'"]),
        ("average", True, ("stratum", "average", "anytime"), ValueError, ["anytime", "guarantee='average'"]),
    ],
)
def test_as_guarantee_refuses_naming_guarantee_and_the_value(value, anytime, allowed, error, words):
    with pytest.raises(error) as err:
        as_guarantee(value, anytime=anytime, allowed=allowed)
    assert all(w in str(err.value) for w in words), str(err.value)


# -- stop levels ----------------------------------------------------------------------------------
@pytest.mark.parametrize("level", [0.8, 0.9, 0.95, 0.99])
def test_stop_levels_are_the_closed_forms(level):
    # the stratum guarantee keeps 0.7 of 1 - level for the interval it stops on (0.965 at 0.95);
    # a confidence sequence and the pooled interval stop at the level itself
    assert Guarantee.stratum().stop_level(level) == pytest.approx(1 - 0.7 * (1 - level), abs=1e-15)
    assert Guarantee.anytime().stop_level(level) == level
    assert Guarantee.average().stop_level(level) == level
    assert isinstance(Guarantee.anytime().stop_level(np.float64(level)), float)


# -- bounds ---------------------------------------------------------------------------------------
def test_stratum_bounds_are_clopper_pearson_while_fewer_than_three_strata_have_trials():
    s, n = [3, 0, 17, 0], [40, 0, 60, 0]
    lo, hi = Guarantee.stratum().bounds(s, n, 0.9)
    for j in (0, 2):
        assert (lo[j], hi[j]) == pytest.approx(_exact(s[j], n[j], 0.9), abs=1e-9)
    assert (lo[1], hi[1], lo[3], hi[3]) == (0.0, 1.0, 0.0, 1.0)  # no trials: [0, 1]


def test_stratum_bounds_cover_each_stratum_at_every_rate_by_enumeration():
    # with three other strata labelled the interval is adaptive; its prior comes from the
    # others only, so for fixed other counts the coverage of stratum 0 over its own binomial
    # is at least the level at every true rate
    n0, others_s, others_n, level = 25, [2, 6, 3], [40, 50, 30], 0.9
    ends = np.array(
        [[v[0] for v in Guarantee.stratum().bounds([s0, *others_s], [n0, *others_n], level)] for s0 in range(n0 + 1)]
    )
    s0 = np.arange(n0 + 1)
    assert not np.allclose(ends, np.array([_exact(k, n0, level) for k in s0]))  # not Clopper-Pearson
    for rate in np.linspace(0.005, 0.6, 120):
        covered = (ends[:, 0] <= rate) & (rate <= ends[:, 1])
        assert stats.binom.pmf(s0, n0, rate)[covered].sum() >= level - 1e-9, rate


def test_anytime_bounds_are_where_the_mixture_martingale_reaches_one_over_alpha():
    s, n, c, level = np.array([7, 30, 0]), np.array([60, 90, 0]), np.array([4.0, 11.0, 4.0]), 0.95
    lo, hi = Guarantee.anytime().bounds(s, n, level, concentration=c)

    def log_m(p, s, n, c):  # M_n(p) with the prior Beta(c p, c (1 - p)), by its closed form
        return (
            special.betaln(c * p + s, c * (1 - p) + n - s)
            - special.betaln(c * p, c * (1 - p))
            - (s * np.log(p) + (n - s) * np.log1p(-p))
        )

    for j in (0, 1):
        for end in (lo[j], hi[j]):
            assert log_m(end, s[j], n[j], c[j]) == pytest.approx(np.log(1 / (1 - level)), abs=1e-6)
        assert log_m(s[j] / n[j], s[j], n[j], c[j]) < np.log(1 / (1 - level))
    assert (lo[2], hi[2]) == (0.0, 1.0)
    # wider than the fixed-n exact interval: valid at every number of labels at once
    assert lo[0] < _exact(7, 60, level)[0] and hi[0] > _exact(7, 60, level)[1]


def test_bounds_refuse_the_average_guarantee_and_a_sequence_without_concentration():
    with pytest.raises(ValueError, match="'average'.*pooled posterior"):
        Guarantee.average().bounds([1, 2], [10, 10], 0.95)
    with pytest.raises(ValueError, match="concentration"):
        Guarantee.anytime().bounds([1, 2], [10, 10], 0.95)


def test_only_the_anytime_guarantee_tunes_sequence_concentrations():
    rows, level = [10, 500, 10**6], 0.95
    assert Guarantee.stratum().sequence_concentrations(rows, level) is None
    assert Guarantee.average().sequence_concentrations(rows, level, 0.05) is None
    got = Guarantee.anytime().sequence_concentrations(rows, level, 0.05)
    cap = planned_trials(0.05, level)  # the size at which the sequence reaches 0.05 at rate 1/2
    want = [tuned_concentration(max(min(r, cap), 20), level) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_choose_reads_the_own_interval_per_stratum_and_the_pooled_one_on_average():
    own = (np.array([0.1, 0.2, 0.3]), np.array([0.3, 0.4, 0.5]))
    pooled = (np.array([0.15, 0.22, 0.31]), np.array([0.25, 0.33, 0.45]))

    def never():
        raise AssertionError("the per-stratum guarantees do not ask which strata are atypical")

    for g in (Guarantee.stratum(), Guarantee.anytime()):
        lo, hi, mine = g.choose(own, pooled, never)
        assert lo is own[0] and hi is own[1] and mine.all()
    lo, hi, mine = Guarantee.average().choose(own, pooled, lambda: np.array([False, True, False]))
    assert lo.tolist() == [0.15, 0.2, 0.31] and hi.tolist() == [0.25, 0.4, 0.45] and mine.tolist() == [0, 1, 0]
    lo, hi, mine = Guarantee.average().choose(own, pooled)  # nothing atypical: all pooled
    assert lo.tolist() == pooled[0].tolist() and not mine.any()
