"""Where the decision goals (``"decide"``, ``"gap"``) send labels: the expected progress toward a decision.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from bayeseval.campaign.goals import Decide, Gap
from bayeseval.campaign.state import RuleState

__all__ = ["decision_allocation", "decision_gains", "gap_targets", "undecided_excess"]


# decision goals: proposal and forecast
# ---------------------------------------------------------------------------------------
def _beta_approx(state: RuleState) -> tuple[np.ndarray, np.ndarray]:
    """Each stratum's posterior as the Beta with its mean and variance (pooling included)."""
    mean = np.clip(state.posterior.mean().to_numpy(), 1e-9, 1 - 1e-9)
    neff = state.posterior.n_eff().to_numpy()
    return mean * neff, (1.0 - mean) * neff


def own_binding(state: RuleState) -> np.ndarray:
    """Strata whose pooled ``P(meets)`` is decided while their own decision is not.

    Goal ``"decide"`` with a pooled model (all False otherwise). Under
    ``guarantee="stratum"`` the anytime test decides on the stratum's own data, so a
    stratum the pooled posterior already decides is planned on its own data.
    """
    k = len(state.strata)
    if not isinstance(state.goal, Decide) or state.model == "independent":
        return np.zeros(k, bool)
    return state.pooled_decided() & ~state.goal_met()


def decision_betas(state: RuleState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def decision_gains(
    state: RuleState, horizon: int = 10
) -> tuple[Callable[[int, float], float], np.ndarray, np.ndarray]:
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
    gain : callable
        ``gain(j, t)``.
    p_trial : numpy.ndarray
        Probability that a label is a trial, per stratum.
    eligible : numpy.ndarray of bool
        Strata not done with rows left (all strata with rows left when every one is done).
    """
    a, b, thr, floor = decision_betas(state)
    p = np.clip(state.p_trial(), 1e-6, 1.0)
    neff = state.posterior.n_eff().to_numpy()
    hw = state.halfwidths()
    done = state.stratum_done()
    cap = state.available.astype(np.int64)

    def gain(j: int, t: float) -> float:
        ahead = t + horizon * p[j]
        d = (undecided_excess(a[j], b[j], thr[j], t, floor[j]) - undecided_excess(a[j], b[j], thr[j], ahead, floor[j]))
        d = max(d / horizon, 0.0)
        shrink = hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j])))
        return float(d + 1e-3 * shrink)

    eligible = (cap > 0) & ~done
    return gain, p, eligible if eligible.any() else cap > 0


def gap_targets(state: RuleState) -> np.ndarray:
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


def greedy_decision(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> np.ndarray:
    """Greedy batch for goals ``"decide"`` and ``"gap"``: largest gain per unit cost first."""
    k = len(state.strata)
    cost = np.ones(k) if costs is None else np.asarray(costs, dtype=float)
    cap = state.available.astype(np.int64)
    counts = np.zeros(k, np.int64)
    if isinstance(state.goal, Gap):
        p = np.clip(state.p_trial(), 1e-6, 1.0)
        neff = state.posterior.n_eff().to_numpy()
        lo, hi = state.gap()["bounds"]
        hw = (hi - lo) / 2

        def gain(j: int, t: float) -> float:
            return float(hw[j] * (np.sqrt(neff[j] / (neff[j] + t)) - np.sqrt(neff[j] / (neff[j] + t + p[j]))))

        eligible = (cap > 0) & gap_targets(state)
        eligible = eligible if eligible.any() else cap > 0
    else:
        gain, p, eligible = decision_gains(state, max(int(batch_size), 5))
    t = np.clip(state.p_trial(), 1e-6, 1.0) * state.pending
    g = np.array([gain(j, t[j]) / cost[j] if eligible[j] else -np.inf for j in range(k)])
    for _ in range(int(batch_size)):
        j = int(np.argmax(g))
        if not np.isfinite(g[j]):
            break
        counts[j] += 1
        t[j] += p[j]
        g[j] = -np.inf if counts[j] >= cap[j] else gain(j, t[j]) / cost[j]
    return counts


def decision_allocation(state: RuleState, batch_size: int, costs: np.ndarray | None = None) -> pd.Series:
    """Labels per stratum for goals ``"decide"`` and ``"gap"`` (the rules' decision mode).

    Goal ``"decide"``: each label goes to the undecided stratum whose next label most reduces
    the expected excess of ``min(P(meets), 1 - P(meets))`` over ``1 - level`` (see
    :func:`decision_gains`), per unit of label cost; after each label that stratum's expected
    trials grow by ``P(trial)``, so a batch spreads over strata near a decision and leaves
    strata whose rate sits on the threshold for last. Goal ``"gap"``: the strata keeping the
    verdict undecided (:func:`gap_targets`) by expected half-width reduction.

    Parameters
    ----------
    state : RuleState
        The campaign's state (goal ``"decide"`` or ``"gap"``).
    batch_size : int
        Labels in the batch.
    costs : numpy.ndarray, optional
        Label cost per stratum (default 1 each).

    Returns
    -------
    pandas.Series
        Labels per stratum, at most the rows available.

    Examples
    --------
    Stratum 0 (no error in 100 against a 0.10 threshold) is decided and gets nothing:

    >>> st = RuleState.from_counts([0, 3, 9], [100, 30, 60], available=[500, 500, 500],
    ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
    >>> st.decisions().tolist()
    ['meets', 'undecided', 'undecided']
    >>> a = decision_allocation(st, 20)
    >>> int(a.iloc[0]), int(a.sum())
    (0, 20)
    """
    return pd.Series(greedy_decision(state, batch_size, costs), index=state.strata, name="decision")
