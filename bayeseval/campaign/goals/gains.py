"""What one more label is worth toward a campaign's goal, stratum by stratum.

Each goal (:mod:`bayeseval.campaign.goals.goal`) answers :meth:`Goal.gains
<bayeseval.campaign.goals.goal.Goal.gains>` with a :class:`Gains`: the gain ``one(j, t)`` of one
more label to stratum ``j`` when ``t`` further trials are already expected there, the
probability ``p_trial`` that a label is a trial of the metric, and the strata that may get
labels. The allocation rules (:mod:`bayeseval.campaign.loop.rules`,
:mod:`bayeseval.campaign.goals.decision`) hand out a batch one label at a time to the largest gain.

* :func:`width_gains` (:class:`~bayeseval.campaign.goals.each.Each`): the expected reduction of the
  stratum's stopping half-width's excess over the target;
* :func:`weighted_gains` (:class:`~bayeseval.campaign.goals.overall.Overall`): of the weighted rate's
  posterior variance;
* :func:`decision_gains` (:class:`~bayeseval.campaign.goals.decide.Decide`): of the expected
  undecidedness (:func:`undecided_excess`);
* :func:`gap_gains` (:class:`~bayeseval.campaign.goals.gap.Gap`): of the half-width of the strata
  that keep the gap verdict undecided (:func:`gap_targets`).

The functions read a campaign state (:class:`~bayeseval.campaign.loop.rule_state.RuleState`) through its
methods only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Gains",
    "width_gains",
    "weighted_gains",
    "decision_gains",
    "gap_gains",
    "gap_targets",
    "decision_betas",
    "own_binding",
    "undecided_excess",
]


class Gains(NamedTuple):
    """What one more label is worth per stratum (:meth:`bayeseval.campaign.goals.goal.Goal.gains`).

    Attributes
    ----------
    one : callable
        ``one(j, t)``: the gain of one more label to stratum ``j`` with ``t`` further trials
        already expected there.
    p_trial : numpy.ndarray
        Probability that a label of each stratum is a trial of the metric (at least 1e-6).
    eligible : numpy.ndarray of bool
        Strata that may get labels.
    every : callable or None
        ``every(t)``: ``one`` for every stratum at once (an array ``t``), where the goal has it.
    """

    one: Callable[[int, float], float]
    p_trial: np.ndarray
    eligible: np.ndarray
    every: Callable[[np.ndarray], np.ndarray] | None = None


def _p_trial(state: Any) -> np.ndarray:
    return np.clip(state.p_trial(), 1e-6, 1.0)


def weighted_gains(state: Any) -> Gains:
    """Gains of goal ``Overall``: the reduction of the weighted rate's expected posterior variance.

    Stratum ``j`` contributes ``c_j / (n_eff_j + t)`` with ``c_j = w_j^2 Var_j n_eff_j``
    (preposterior variance on the effective sample size); a label adds ``p_trial`` trials.

    Parameters
    ----------
    state : RuleState
        The campaign's state.

    Returns
    -------
    Gains
        Every stratum with rows left is eligible.

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([5, 5], [20, 200], available=[50, 50], goal="overall", weights=[0.5, 0.5])
    >>> g = weighted_gains(st)
    >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
    True
    """
    p = _p_trial(state)
    neff = state.posterior.n_eff().to_numpy()
    c = state.weights**2 * state.posterior.var().to_numpy() * neff

    def every(t: np.ndarray) -> np.ndarray:
        return c / (neff + t) - c / (neff + t + p)

    def one(j: int, t: float) -> float:
        return c[j] / (neff[j] + t) - c[j] / (neff[j] + t + p[j])

    return Gains(one, p, state.available > 0, every)


def width_gains(state: Any) -> Gains:
    """Gains of goal ``Each``: the reduction of the expected excess of the stopping half-width.

    After ``t`` more trials the stratum's half-width is expected at ``h sqrt(n_eff / (n_eff +
    t))`` (``h`` and ``n_eff`` of the interval it stops on); a label's gain is the reduction of
    that half-width's excess over the target, plus ``1e-3`` of the reduction itself (ties).
    Strata done get none, unless every stratum is done; a stratum held back although its
    half-width is within the target counts every reduction.

    Parameters
    ----------
    state : RuleState
        The campaign's state.

    Returns
    -------
    Gains
        Strata not done with rows left are eligible (all with rows left when none is).

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
    >>> g = width_gains(st)
    >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
    True
    """
    p = _p_trial(state)
    hw = state.stop_halfwidths()
    neff = state.stop_neff()
    done = state.stratum_done()
    target = np.where(done | (hw > state.target_halfwidth), state.target_halfwidth, 0.0)

    def every(t: np.ndarray) -> np.ndarray:
        h0 = hw * np.sqrt(neff / (neff + t))
        h1 = hw * np.sqrt(neff / (neff + t + p))
        excess = np.maximum(h0 - target, 0) - np.maximum(h1 - target, 0)
        return excess + 1e-3 * (h0 - h1)

    def one(j: int, t: float) -> float:
        h0 = hw[j] * np.sqrt(neff[j] / (neff[j] + t))
        h1 = hw[j] * np.sqrt(neff[j] / (neff[j] + t + p[j]))
        return max(h0 - target[j], 0.0) - max(h1 - target[j], 0.0) + 1e-3 * (h0 - h1)

    cap = state.available > 0
    eligible = cap & ~done
    return Gains(one, p, eligible if eligible.any() else cap, every)


def gap_gains(state: Any) -> Gains:
    """Gains of goal ``Gap``: the expected half-width reduction of the strata keeping the verdict open.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``Gap``).

    Returns
    -------
    Gains
        The strata of :func:`gap_targets` with rows left are eligible (all with rows left when
        none is).

    Examples
    --------
    >>> from bayeseval.campaign.loop.rule_state import RuleState
    >>> st = RuleState.from_counts([2, 9], [40, 40], available=[100, 100], goal="gap", tolerance=0.05)
    >>> g = gap_gains(st)
    >>> bool(g.one(0, 0.0) > 0), g.eligible.tolist()
    (True, [True, True])
    """
    p = _p_trial(state)
    neff = state.posterior.n_eff().to_numpy()
    lo, hi = state.gap()["bounds"]
    hw = (hi - lo) / 2

    def one(j: int, t: float) -> float:
        return float(hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j]))))

    cap = state.available.astype(np.int64) > 0
    eligible = cap & gap_targets(state)
    return Gains(one, p, eligible if eligible.any() else cap)


def _beta_approx(state: Any) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's posterior as the Beta with its mean and variance (pooling included)."""
    mean = np.clip(state.posterior.mean().to_numpy(), 1e-9, 1 - 1e-9)
    neff = state.posterior.n_eff().to_numpy()
    return mean * neff, (1.0 - mean) * neff


def own_binding(state: Any) -> np.ndarray:
    """Strata whose pooled ``P(meets)`` is decided while their own decision is not.

    Goal ``"decide"`` with a pooled model (all False otherwise). Under
    ``guarantee="stratum"`` the anytime test decides on the stratum's own data, so a
    stratum the pooled posterior already decides is planned on its own data.
    """
    k = len(state.strata)
    if getattr(state.goal, "threshold", None) is None or state.model == "independent":
        return np.zeros(k, bool)
    return state.pooled_decided() & ~state.goal_met()


def decision_betas(state: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def decision_gains(state: Any, horizon: int = 10) -> Gains:
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
    state : RuleState
        A state with goal ``"decide"``.
    horizon : int
        Labels looked ahead (the allocation passes its batch size, at least 5).

    Returns
    -------
    Gains
        ``one(j, t)``, ``p_trial`` and the eligible strata: those not done with rows left
        (all strata with rows left when every one is done).
    """
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


def gap_targets(state: Any) -> np.ndarray:
    """The strata whose intervals keep the gap verdict undecided (goal ``"gap"``).

    When the gap estimate exceeds the tolerance the verdict can only become ``"outside"``,
    which needs the two extreme strata's intervals narrower (as the audit's labels-needed
    table says); otherwise ``"within tolerance"`` needs every stratum whose interval end lies
    more than the tolerance from the opposite end of another's. Strata without trials are
    always targets.

    Parameters
    ----------
    state : RuleState
        A state with goal ``"gap"``.

    Returns
    -------
    numpy.ndarray of bool
        One value per stratum.
    """
    info = state.gap()
    lo, hi = info["bounds"]
    mean = np.where(state.trials > 0, state.successes / np.maximum(state.trials, 1), np.nan)
    tol = info["tolerance"]
    target = (state.trials == 0) | ~state.stratum_done()
    if info["verdict"] != "undecided":
        return target & ~state.stratum_done() | (state.trials == 0)
    if info["gap"] > tol:
        target[[int(np.nanargmax(mean)), int(np.nanargmin(mean))]] = True
    else:
        target |= (hi - lo.min() > tol) | (hi.max() - lo > tol)
    return target
