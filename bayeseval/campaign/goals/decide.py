"""The goal :class:`Decide`: every stratum decided against a threshold.

What a decision goal needs beyond the state's decisions
(:meth:`RuleState.decisions <bayeseval.campaign.loop.rule_state.RuleState.decisions>`) lives here:
the gain of one more label (:func:`decision_gains`, on the Beta approximations of
:func:`decision_betas`), the forecast of the labels each stratum still needs and of the strata
the rows left cannot decide (:meth:`Decide.labels_needed`, :meth:`Decide.out_of_reach`, on the
preposterior of the next trials), and what the status table, the simulation and the texts
say of the decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._kernels.anytime import confidence_sequence_bounds, decision_boundaries
from bayeseval._kernels.guarantee import DECISION_MIN_TRIALS, Guarantee
from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains
from bayeseval.campaign.goals.goal import DIRECTIONS, Goal, check_margin, check_threshold
from bayeseval.campaign.goals.state import GoalState, fill_goal_doc
from bayeseval.counts.metrics import get_metric

__all__ = [
    "Decide",
    "AT_THRESHOLD",
    "AT_MARGIN",
    "decision_gains",
    "decision_betas",
    "own_binding",
    "undecided_excess",
    "true_decisions",
]

#: the decision of a stratum known to lie within the indifference margin of its threshold
AT_THRESHOLD = "at the threshold"
#: a stratum decided at the threshold, as the status table's ``outcome`` says it
AT_MARGIN = "at the threshold (within the margin)"


class Decide(Goal):
    """Every stratum decided against ``threshold``: meets it, fails it, or (with a margin) at it.

    Parameters
    ----------
    threshold : float, dict or sequence
        The rate's threshold: one number in (0, 1) for every stratum, or a mapping stratum ->
        number (every stratum named), or one number per stratum.
    direction : {"below", "above"}, optional
        A stratum meets the threshold when its rate is below it or above it; default: above
        for accuracy-type metrics, below for error-type ones (resolved by the campaign).
    margin : float
        Indifference margin in [0, 0.5): a stratum whose interval lies within
        ``threshold +/- margin`` is decided ``"at the threshold"``.

    Examples
    --------
    >>> Decide(0.1, "below").settings()
    {'threshold': 0.1, 'direction': 'below', 'margin': 0.0}
    """

    name = "decide"
    _fields = {"threshold": "threshold", "direction": "direction", "margin": "margin"}
    decides = True
    has_threshold = True

    def __init__(
        self,
        threshold: Any,
        direction: str | None = GOAL_DEFAULTS["direction"],
        margin: float = GOAL_DEFAULTS["margin"],
    ) -> None:
        self.threshold = check_threshold(threshold)
        if direction is not None and direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {list(DIRECTIONS)}, got {direction!r}")
        self.direction = direction
        self.margin = check_margin(margin)

    def met(self, state: GoalState) -> np.ndarray:
        """Strata decided on one side of the threshold or at it.

        {goal_sections}
        """
        return state.side_decided() | state.at_threshold()

    @fill_goal_doc
    def gains(self, state: GoalState, horizon: int = 10) -> Gains:
        """The expected progress toward each stratum's decision (:func:`decision_gains`).

        Parameters
        ----------
        {campaign_state}
        horizon : int
            Labels looked ahead (the allocation passes its batch size, at least 5).

        Returns
        -------
        Gains
            Undecided strata with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([0, 3], [100, 30], available=[500, 500], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).gains(st).eligible.tolist()  # stratum 0 is decided
        [False, True]
        """
        return decision_gains(state, horizon)

    def describe(self, level: float) -> str:
        """The goal in words.

        {goal_sections}
        """
        return f"decide each stratum against threshold {self.threshold} ({self.direction}) at level {level}"

    def status_line(self, level: float) -> str:
        """The goal in the status line of ``bayeseval campaign status`` (:meth:`Goal.status_line`).

        {goal_sections}

        Returns
        -------
        str
            One phrase: the threshold when every stratum has the same.

        Examples
        --------
        >>> Decide(0.1, "below", margin=0.02).status_line(0.95)
        'goal: decide whether each rate is below 0.1 (within 0.02 of it: at the threshold) at level 0.95'
        >>> Decide((0.1, 0.2), "above").status_line(0.9)
        'goal: decide whether each rate is above its threshold at level 0.9'
        """
        values = set(self.threshold) if isinstance(self.threshold, tuple) else {self.threshold}
        thr = next(iter(values)) if len(values) == 1 else "its threshold"
        within = f" (within {self.margin:g} of it: at the threshold)" if self.margin else ""
        return f"goal: decide whether each rate is {self.direction} {thr}{within} at level {level}"

    def report_line(self, level: float, status: pd.DataFrame) -> str:
        """The goal with the decisions so far (:meth:`Goal.report_line`).

        The decisions are read from the status table's ``decision`` column.

        {goal_sections}

        Examples
        --------
        >>> status = pd.DataFrame({"decision": ["meets", "meets", "undecided"]})
        >>> Decide(0.1, "below").report_line(0.95, status)
        'decide whether each rate is below its threshold at level 0.95 (2 meets, 0 fails, 1 undecided)'
        """
        counts = status["decision"].value_counts()
        made = ", ".join(
            f"{int(counts.get(d, 0))} {d}"
            for d in ("meets", "fails", "at the threshold", "undecided")
            if d != "at the threshold" or self.margin
        )
        return f"decide whether each rate is {self.direction} its threshold at level {level} ({made})"

    def for_metric(self, metric: str) -> Goal:
        """The goal with its direction resolved: above for accuracy-type metrics, below otherwise.

        Parameters
        ----------
        metric : str
            The campaign's metric (a name): a metric whose higher rates are better
            (:attr:`Metric.higher_is_better <bayeseval.counts.metrics.Metric.higher_is_better>`)
            is met from above, any other from below.

        Returns
        -------
        Decide
            ``self`` when the direction is set, else a copy with it.

        Examples
        --------
        >>> Decide(0.9).for_metric("accuracy")
        Decide(threshold=0.9, direction='above', margin=0.0)
        """
        if self.direction is not None:
            return self
        return Decide(self.threshold, "above" if get_metric(metric).higher_is_better else "below", self.margin)

    def status_columns(self, state: GoalState) -> dict[str, Any]:
        """Each stratum's ``threshold``, ``p_meets`` and ``decision`` (:meth:`Goal.status_columns`).

        {goal_sections}

        Returns
        -------
        dict
            Column name -> one value per stratum.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1, 30], [200, 200], available=[0, 0], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).status_columns(st)["decision"].tolist()
        ['meets', 'fails']
        """
        return {"threshold": state.threshold, "p_meets": state.p_meets(), "decision": state.decisions()}

    def outcomes(self, state: GoalState) -> tuple[np.ndarray, np.ndarray]:
        """``"decided: meets"``, ``"decided: fails"``, :data:`AT_MARGIN` or ``"undecided"`` (:meth:`Goal.outcomes`).

        {goal_sections}

        Returns
        -------
        outcome : numpy.ndarray of str
            One value per stratum.
        met : numpy.ndarray of bool
            Decided strata.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1, 18], [200, 200], available=[0, 0], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).outcomes(st)[0].tolist()
        ['decided: meets', 'undecided']
        """
        names = {"meets": "decided: meets", "fails": "decided: fails", AT_THRESHOLD: AT_MARGIN}
        out = np.array([names.get(d, "undecided") for d in state.decisions()], dtype=object)
        return out, out != "undecided"

    def simulation_fields(self, state: GoalState, true_rates: np.ndarray) -> dict[str, Any]:
        """Strata ``decided`` at stop and ``wrong_decisions`` among them (:meth:`Goal.simulation_fields`).

        A decision is wrong when the true rate contradicts it (:func:`true_decisions`);
        :data:`AT_THRESHOLD` is wrong when the true rate is more than the margin from the
        threshold.

        {goal_sections}

        Returns
        -------
        dict
            ``decided`` and ``wrong_decisions``.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1, 30], [200, 200], available=[0, 0], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> Decide(0.1).simulation_fields(st, np.array([0.01, 0.05]))
        {'decided': 2, 'wrong_decisions': 1}
        """
        made = state.decisions()
        truth = true_decisions(true_rates, state.threshold, state.direction)
        decided = made != "undecided"
        at = made == AT_THRESHOLD  # right when the true rate is within the margin
        wrong = np.where(
            at, np.abs(true_rates - np.asarray(state.threshold, dtype=float)) > state.margin, made != truth
        )
        return {"decided": int(decided.sum()), "wrong_decisions": int(np.sum(decided & wrong))}

    def labels_needed(self, state: GoalState) -> np.ndarray:
        """Labels each stratum still needs before it is more likely decided than not (:meth:`Goal.labels_needed`).

        The smallest number of further labels ``m`` after which the preposterior probability
        that the stratum is decided reaches 0.5, by bisection: ``P(meets)`` at least the
        decision level or at most one minus it, on the Beta approximation of its posterior
        (for a stratum whose pooled ``P(meets)`` is decided while its own decision is not, its
        own Jeffreys ``P(meets)``, :func:`own_binding`; with a margin, also its interval within
        ``threshold +/- margin``); under ``guarantee="stratum"`` the stopping rule's own anytime
        test. Pending labels count as requested. Zero for strata decided, without rows left or
        without trials (the forecast says why those have none).

        {goal_sections}

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([3, 5], [50, 500], available=[5000, 5000], model="independent",
        ...                            goal="decide", threshold=np.array([0.05, 0.05]))
        >>> need = Decide(0.05).labels_needed(st)
        >>> bool(need[0] > 0), int(need[1])
        (True, 0)
        """
        cap = state.available.astype(np.int64)
        out = np.zeros(len(state.strata))
        undecided = _undecided_after(state)
        for j in np.flatnonzero(~state.stratum_done() & (cap > 0) & (state.trials > 0)).tolist():
            hi_m = 1
            while hi_m < cap[j] and undecided(j, hi_m):
                hi_m *= 2
            hi_m = min(hi_m, int(cap[j]))
            lo_m = hi_m // 2
            while hi_m - lo_m > 1:
                mid = (lo_m + hi_m) // 2
                lo_m, hi_m = (mid, hi_m) if undecided(j, mid) else (lo_m, mid)
            out[j] = hi_m
        return out

    def out_of_reach(self, state: GoalState, budget_left: int | None = None) -> np.ndarray:
        """Which undecided strata the rows or the budget left cannot decide (:meth:`Goal.out_of_reach`).

        A stratum is out of reach of its rows when it is more likely undecided than not after
        every row left of it is labelled (the preposterior of :meth:`labels_needed` at the rows available), and
        out of reach of the budget when that holds at the ``budget_left`` labels (fewer than its
        rows); see :func:`~bayeseval.campaign.loop.forecast.decision_reach`.

        {goal_sections}

        {reach_returned}

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([1230], [10000], available=[90000], model="independent",
        ...                            goal="decide", threshold=np.array([0.12]))
        >>> Decide(0.12).out_of_reach(st, budget_left=500).tolist()
        ['budget']
        """
        out = np.full(len(state.strata), None, dtype=object)
        cap = state.available.astype(np.int64)
        undecided = _undecided_after(state)
        for j in np.flatnonzero(~state.stratum_done()).tolist():
            if undecided(j, int(cap[j])):
                out[j] = "rows"
            elif budget_left is not None and budget_left < cap[j] and undecided(j, max(int(budget_left), 0)):
                out[j] = "budget"
        return out


# what one more label is worth
# ---------------------------------------------------------------------------------------
def _beta_approx(state: GoalState) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's posterior as the Beta with its mean and variance (pooling included)."""
    mean = np.clip(state.posterior.mean().to_numpy(), 1e-9, 1 - 1e-9)
    neff = state.posterior.n_eff().to_numpy()
    return mean * neff, (1.0 - mean) * neff


def own_binding(state: GoalState) -> np.ndarray:
    """Strata whose pooled ``P(meets)`` is decided while their own decision is not.

    Goal ``"decide"`` with a pooled model (all False otherwise). Under
    ``guarantee="stratum"`` the anytime test decides on the stratum's own data, so a
    stratum the pooled posterior already decides is planned on its own data.
    """
    k = len(state.strata)
    if state.threshold is None or state.model == "independent":
        return np.zeros(k, bool)
    return state.pooled_decided() & ~state.goal_met()


def decision_betas(state: GoalState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Beta parameters, thresholds and decision floors the decision allocation works on.

    Each stratum's pooled Beta approximation with ``floor = 1 - level`` (0 when its goal is
    met); where the pooled decision runs ahead of the stratum's own (:func:`own_binding`)
    its own Jeffreys ``Beta(s + 1/2, n - s + 1/2)`` with ``floor = 1 - level``. Mirrored for direction ``"above"``
    (``P(theta > t) = P(1 - theta < 1 - t)``).
    """
    a, b = _beta_approx(state)
    floor = np.where(state.goal_met(), 0.0, 1.0 - state.level)
    own = own_binding(state)
    if own.any():
        s, n = state.successes.astype(float), state.trials.astype(float)
        a, b = np.where(own, s + 0.5, a), np.where(own, n - s + 0.5, b)
        floor = np.where(own, 1.0 - state.level, floor)
    thr = np.asarray(state.threshold, dtype=float)
    if state.direction == "above":
        a, b, thr = b, a, 1.0 - thr
    return a, b, thr, floor


def undecided_excess(a: float, b: float, threshold: float, m: float, floor: float) -> float:
    """Expected excess over ``floor`` of ``min(P, 1 - P)`` after ``m`` more trials.

    ``P = P(theta < threshold)`` under the posterior ``Beta(a + y, b + m - y)`` after ``y``
    successes in ``m`` trials, averaged over the Beta-binomial predictive of ``y``; a
    fractional ``m`` interpolates linearly between its neighbouring integers. Zero when the
    stratum is decided at level ``1 - floor`` whatever the next trials show.

    Parameters
    ----------
    a, b : float
        The stratum's current posterior (a Beta approximation).
    threshold : float
        The decision threshold.
    m : float
        Further trials (>= 0).
    floor : float
        ``1 - decision level`` (0 counts every reduction of the uncertainty).

    Returns
    -------
    float
        The expected excess.

    Examples
    --------
    Far from the threshold one more trial cannot undo a decision:

    >>> undecided_excess(1.0, 99.0, 0.5, 3, 0.05)
    0.0
    >>> round(undecided_excess(5.0, 5.0, 0.5, 0, 0.05), 3)  # P = 0.5 now
    0.45
    """
    lo = int(np.floor(m))
    frac = m - lo
    value = _excess_at(a, b, threshold, lo, floor)
    if frac > 1e-12:
        value = (1 - frac) * value + frac * _excess_at(a, b, threshold, lo + 1, floor)
    return float(value)


def _excess_at(a: float, b: float, thr: float, m: int, floor: float) -> float:
    from scipy.special import betainc, betaln, gammaln

    y = np.arange(m + 1, dtype=float)
    logpmf = gammaln(m + 1.0) - gammaln(y + 1) - gammaln(m - y + 1) + betaln(a + y, b + m - y) - betaln(a, b)
    p = betainc(a + y, b + m - y, thr)
    return float(np.exp(logpmf) @ np.maximum(np.minimum(p, 1.0 - p) - floor, 0.0))


def decision_gains(state: GoalState, horizon: int = 10) -> Gains:
    """The gain of one more label per stratum for goal ``"decide"``, and who may get labels.

    The gain of a label to stratum ``j`` with ``t`` expected further trials is the expected
    reduction of its undecidedness per label over the next ``horizon`` labels,
    (:func:`undecided_excess` at ``t`` minus at ``t + horizon p_j``) / ``horizon`` (``p_j =
    P(trial)``), on the Beta approximation of its posterior (mean and effective
    sample size, so pooled strength counts), with ``floor = 1 - decision level``: the
    expected excess of ``min(P(meets), 1 - P(meets))`` over what a decision allows, so a
    stratum close to a decision gains more per label than one whose rate sits on the
    threshold. Decided strata count every reduction (floor 0). A pooled stratum whose pooled
    ``P(meets)`` is decided while its own decision is not (:func:`own_binding`) is scored
    on its own Jeffreys posterior ``Beta(s + 1/2, n - s + 1/2)`` with ``floor = 1 - level``:
    the expected progress of the own-data decision, which is what its stop waits for. With few
    trials one label can raise the expected excess (a first success can undo a
    near-decision): looking ``horizon`` labels ahead smooths that, and the gain is
    clipped at 0; a ``1e-3`` share of the expected half-width reduction breaks ties (it
    spreads a first batch evenly).

    Parameters
    ----------
    state : GoalState
        A state with goal ``"decide"``.
    horizon : int
        Labels looked ahead (the allocation passes its batch size, at least 5).

    Returns
    -------
    Gains
        ``one(j, t)``, ``p_trial`` and the eligible strata: those not done with rows left
        (all strata with rows left when every one is done).

    Examples
    --------
    No error in 100 labels decides stratum 0 against 0.1; stratum 1 is open:

    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([0, 3], [100, 30], available=[500, 500], model="independent",
    ...                            goal="decide", threshold=np.array([0.1, 0.1]))
    >>> g = decision_gains(st)
    >>> g.eligible.tolist(), bool(g.one(1, 0.0) > 0)
    ([False, True], True)
    """
    if state.per_stratum() and (state.read_intervals()[0] == "units").all():
        return _units_decision_gains(state, horizon)
    a, b, thr, floor = decision_betas(state)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    neff = state.posterior.n_eff().to_numpy()
    hw = state.halfwidths()
    done = state.stratum_done()
    cap = state.available.astype(np.int64)

    def gain(j: int, t: float) -> float:
        ahead = t + horizon * p[j]
        d = undecided_excess(a[j], b[j], thr[j], t, floor[j]) - undecided_excess(a[j], b[j], thr[j], ahead, floor[j])
        d = max(d / horizon, 0.0)
        shrink = hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j])))
        return float(d + 1e-3 * shrink)

    eligible = (cap > 0) & ~done
    return Gains(gain, p, eligible if eligible.any() else cap > 0)


# how many labels a decision still needs
# ---------------------------------------------------------------------------------------
def _undecided_after(state: GoalState) -> Callable[[int, int], bool]:
    """``undecided(j, m)``: whether stratum ``j`` is more likely undecided than not after ``m`` more labels."""
    if state.per_stratum() and (state.read_intervals()[0] == "units").all():
        return _units_undecided_after(state)
    if state.per_stratum():
        return _anytime_undecided_after(state)
    k = len(state.strata)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    t0 = p * state.pending
    a, b, thr, floor = decision_betas(state)
    floor = np.where(own_binding(state), floor, 1.0 - state.level)
    margin = np.where(own_binding(state), 0.0, np.full(k, float(state.margin)))
    level = state.level

    def undecided(j: int, m: int) -> bool:
        return _p_undecided(a[j], b[j], thr[j], t0[j] + m * p[j], floor[j], margin[j], level) > 0.5

    return undecided


def _units_p_undecided(state: GoalState) -> Callable[[int, float], float]:
    """``p(j, m)`` of a clustered campaign (``design.cluster``): P(stratum ``j`` undecided after ``m`` more units).

    The units interval's arms below and above its estimate (``d_lo``, ``d_hi``; the interval
    is not symmetric near 0 and 1), from ``n`` labelled units, shrink to ``d sqrt(n / (n +
    pending + m))`` after ``m`` more units beyond those pending (:meth:`RuleState.stop_neff
    <bayeseval.campaign.loop.rule_state.RuleState.stop_neff>`); the estimate then is about
    normal around today's with the variance the new units add, ``(h^2 - h_m^2) / z^2`` (``h``
    the half-width, ``z`` of the stop level). Undecided while the threshold lies within the
    projected interval and, with a margin, that interval is not within ``threshold +/- margin``.
    NaN for a stratum without a complete unit (no estimate).
    """
    from scipy.stats import norm

    est, neff = state.read_means(), state.stop_neff()
    _, lo, hi = state.read_intervals()
    d_lo, d_hi = est - lo, hi - est
    thr = np.broadcast_to(np.asarray(state.threshold, dtype=float), est.shape)
    t0, margin = state.pending.astype(float), float(state.margin or 0.0)
    z = float(norm.ppf(0.5 + Guarantee.stratum().stop_level(state.level) / 2.0))

    def p_undecided(j: int, m: float) -> float:
        if not np.isfinite(est[j]):
            return float("nan")
        f = np.sqrt(neff[j] / (neff[j] + t0[j] + m))
        lo_m, hi_m = d_lo[j] * f, d_hi[j] * f
        h = (d_lo[j] + d_hi[j]) / 2.0
        sd = max(h * np.sqrt(max(1.0 - f**2, 0.0)) / z, 1e-12)
        p = norm.cdf((thr[j] + lo_m - est[j]) / sd) - norm.cdf((thr[j] - hi_m - est[j]) / sd)
        if margin > 0:  # the projected interval within threshold +/- margin: decided "at the threshold"
            a, b = thr[j] - margin + lo_m, thr[j] + margin - hi_m
            if b > a:
                p -= norm.cdf((b - est[j]) / sd) - norm.cdf((a - est[j]) / sd)
        return float(max(p, 0.0))

    return p_undecided


def _units_undecided_after(state: GoalState) -> Callable[[int, int], bool]:
    """``undecided(j, m)`` of a clustered campaign: :func:`_units_p_undecided` above 0.5 (False without units)."""
    p_undecided = _units_p_undecided(state)
    return lambda j, m: bool(p_undecided(j, m) > 0.5)


def _units_decision_gains(state: GoalState, horizon: int) -> Gains:
    """:func:`decision_gains` of a clustered campaign: the drop of :func:`_units_p_undecided` per unit.

    Over the next ``horizon`` units, plus a ``1e-3`` share of the expected drop of the
    half-width (ties); a stratum without a complete unit gains that whole drop, so empty
    strata are served first.
    """
    p_undecided = _units_p_undecided(state)
    hw, neff = state.stop_halfwidths(), state.stop_neff()
    cap = state.available.astype(np.int64)

    def gain(j: int, t: float) -> float:
        shrink = hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + 1.0)))
        now = p_undecided(j, t)
        if not np.isfinite(now):
            return float(shrink)
        return float(max((now - p_undecided(j, t + horizon)) / horizon, 0.0) + 1e-3 * shrink)

    eligible = (cap > 0) & ~state.stratum_done()
    return Gains(gain, np.ones(len(cap)), eligible if eligible.any() else cap > 0)


def _anytime_undecided_after(state: GoalState) -> Callable[[int, int], bool]:
    """``undecided(j, m)`` under ``guarantee="stratum"``: the stopping rule's own anytime test.

    The preposterior of the test the campaign stops on (:meth:`RuleState.anytime_decisions`:
    the stratum's own counts, at :meth:`RuleState.anytime_level` with
    :meth:`RuleState.decision_concentration`; with a margin also the confidence sequence within
    ``threshold +/- margin``), over the predictive of the next trials from the stratum's
    posterior (:func:`decision_betas`). A fixed-level posterior rule decides far sooner than
    this test, so planning on it under-forecasts (4 labels where thousands were needed).
    """
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    t0 = p * state.pending
    a, b, thr, _ = decision_betas(state)  # mirrored for direction "above": the count of the other class
    s = state.successes.astype(float) if state.direction != "above" else (state.trials - state.successes).astype(float)
    n = state.trials.astype(float)
    level, conc, margin = state.anytime_level(), state.decision_concentration(), float(state.margin or 0.0)

    def undecided(j: int, m: int) -> bool:
        more = int(round(t0[j] + m * p[j]))
        y, pmf = _predictive(a[j], b[j], more)
        total = n[j] + more
        if total < DECISION_MIN_TRIALS:
            return True
        below, above = decision_boundaries(total, thr[j], level, conc)
        hits = s[j] + y
        open_ = (hits > below) & (hits < above)
        if margin > 0 and open_.any():
            lo, hi = confidence_sequence_bounds(hits[open_], np.full(int(open_.sum()), total), level, conc)
            open_[open_] = ~((lo >= thr[j] - margin) & (hi <= thr[j] + margin))
        return float(pmf @ open_) > 0.5

    return undecided


def _predictive(a: float, b: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Outcomes ``y`` of ``m`` more trials and their Beta-binomial probabilities (those above 1e-17)."""
    from scipy.special import betaln, gammaln

    y = np.arange(m + 1, dtype=float)
    logpmf = gammaln(m + 1.0) - gammaln(y + 1) - gammaln(m - y + 1) + betaln(a + y, b + m - y) - betaln(a, b)
    keep = logpmf > -40.0  # outcomes of probability below 1e-17 change nothing
    return y[keep], np.exp(logpmf[keep])


def _p_undecided(
    a: float, b: float, thr: float, m: float, floor: float, margin: float = 0.0, level: float = 0.95
) -> float:
    """Preposterior probability that the stratum is undecided after ``round(m)`` trials.

    Undecided: ``min(P, 1 - P) > floor`` and, with a margin, the equal-tailed interval at
    ``level`` not within ``thr +/- margin``.
    """
    from scipy.special import betainc, betaincinv, betaln, gammaln

    m = int(round(m))
    y = np.arange(m + 1, dtype=float)
    logpmf = gammaln(m + 1.0) - gammaln(y + 1) - gammaln(m - y + 1) + betaln(a + y, b + m - y) - betaln(a, b)
    keep = logpmf > -40.0  # outcomes of probability below 1e-17 change nothing
    y, pmf = y[keep], np.exp(logpmf[keep])
    p = betainc(a + y, b + m - y, thr)
    open_ = np.minimum(p, 1.0 - p) > floor
    if margin > 0 and open_.any():
        tail, i = (1.0 - level) / 2.0, np.flatnonzero(open_)
        lo = betaincinv(a + y[i], b + m - y[i], tail)
        hi = betaincinv(a + y[i], b + m - y[i], 1.0 - tail)
        open_[i] = ~((lo >= thr - margin) & (hi <= thr + margin))
    return float(pmf @ open_)


def true_decisions(true_rates: Any, threshold: Any, direction: str) -> np.ndarray:
    """The correct decision per stratum: ``"meets"`` when the true rate is on the right side.

    Parameters
    ----------
    true_rates, threshold : array-like
        True rates and thresholds per stratum.
    direction : {"below", "above"}
        ``"below"``: a rate meets the threshold when it is strictly below it.

    Returns
    -------
    numpy.ndarray of str
        ``"meets"`` or ``"fails"`` (a rate equal to the threshold fails).

    Examples
    --------
    >>> true_decisions([0.05, 0.1, 0.2], 0.1, "below").tolist()
    ['meets', 'fails', 'fails']
    """
    tr, thr = np.asarray(true_rates, dtype=float), np.asarray(threshold, dtype=float)
    meets = tr < thr if direction == "below" else tr > thr
    return np.where(meets, "meets", "fails").astype(object)
