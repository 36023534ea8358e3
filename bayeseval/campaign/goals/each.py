"""The goal :class:`Each`: every stratum's interval within a half-width."""

from __future__ import annotations

import numpy as np

from bayeseval._kernels.finite_pool import pool_sample_size
from bayeseval._kernels.guarantee import guarantee_stop_level
from bayeseval.campaign.fields import GOAL_DEFAULTS
from bayeseval.campaign.goals.gains import Gains, trial_probabilities
from bayeseval.campaign.goals.goal import Goal, check_halfwidth
from bayeseval.campaign.goals.state import GoalState, fill_goal_doc

__all__ = ["Each", "width_gains"]


@fill_goal_doc
class Each(Goal):
    """Every stratum's interval within ``halfwidth``.

    Parameters
    ----------
    {target_halfwidth}

    Examples
    --------
    >>> Each(0.05) == "each", Each(0.05).settings()
    (True, {'target_halfwidth': 0.05})
    >>> Each()
    Each(halfwidth=0.05)
    """

    name = "each"
    _fields = {"target_halfwidth": "halfwidth"}
    checks_feasibility = True

    def __init__(self, halfwidth: float = GOAL_DEFAULTS["halfwidth"]) -> None:
        self.halfwidth = check_halfwidth(halfwidth, "halfwidth")

    def met(self, state: GoalState) -> np.ndarray:
        """Strata whose stopping interval (:meth:`RuleState.stop_halfwidths`) is within the target.

        {goal_sections}
        """
        return state.stop_halfwidths() <= state.target_halfwidth

    def gains(self, state: GoalState, horizon: int = 10) -> Gains:
        """The expected reduction of each stratum's excess half-width (:func:`width_gains`).

        {goal_sections}

        Returns
        -------
        Gains
            Strata not done with rows left may get labels.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([5, 5], [10, 200], available=[500, 500], target_halfwidth=0.05)
        >>> g = Each(0.05).gains(st)
        >>> bool(g.one(0, 0.0) > g.one(1, 0.0))
        True
        """
        return width_gains(state)

    @property
    def stratum_halfwidth(self) -> float:
        """The target half-width of every stratum (:attr:`Goal.stratum_halfwidth`).

        Returns
        -------
        float
            ``halfwidth``.
        """
        return self.halfwidth

    def labels_needed(self, state: GoalState) -> np.ndarray:
        """Labels per stratum so the expected half-width it stops on meets the target (:meth:`Goal.labels_needed`).

        The smallest ``m`` with ``h sqrt(n_eff / (n_eff + P(trial) m)) <= target``, ``h`` and
        ``n_eff`` of the interval the stratum stops on (:meth:`RuleState.stop_halfwidths
        <bayeseval.campaign.loop.rule_state.RuleState.stop_halfwidths>`, :meth:`RuleState.stop_neff
        <bayeseval.campaign.loop.rule_state.RuleState.stop_neff>`); pending labels count as
        already requested.

        {goal_sections}

        Returns
        -------
        numpy.ndarray
            One value per stratum, not capped at the rows left.

        Examples
        --------
        >>> from bayeseval.campaign.loop.rule_state import RuleState
        >>> st = RuleState.from_counts([10, 2], [100, 400], available=[10_000, 10_000], model="independent")
        >>> need = Each(0.05).labels_needed(st)
        >>> bool(need[0] > 0), int(need[1])
        (True, 0)
        """
        p = np.clip(state.p_trial(), 1e-6, 1)
        t0 = p * state.pending
        target = state.target_halfwidth
        hw = state.stop_halfwidths()
        neff = state.stop_neff()
        need_t = np.maximum(neff * (hw / target) ** 2 - neff - t0, 0.0)
        rows = state.pool_trials()
        if np.isfinite(rows).any():
            need_t = _pool_trials_needed(state, need_t, hw, neff, t0, rows)
        return np.asarray(np.ceil(need_t / p - 1e-9), dtype=float)


@fill_goal_doc
def width_gains(state: GoalState) -> Gains:
    """Gains of goal ``Each``: the reduction of the expected excess of the stopping half-width.

    After ``t`` more trials the stratum's half-width is expected at ``h sqrt(n_eff / (n_eff +
    t))`` (``h`` and ``n_eff`` of the interval it stops on); a label's gain is the reduction of
    that half-width's excess over the target, plus ``1e-3`` of the reduction itself (ties).
    Strata done get none, unless every stratum is done; a stratum held back although its
    half-width is within the target counts every reduction.

    Parameters
    ----------
    {campaign_state}

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
    p = trial_probabilities(state)
    hw = state.stop_halfwidths()
    neff = state.stop_neff()
    done = state.stratum_done()
    target = np.where(done | (hw > state.target_halfwidth), state.target_halfwidth, 0.0)
    rows = state.pool_trials()
    if np.isfinite(rows).any():  # a finite pool: the half-width falls faster, to 0 at its last row
        return _pool_width_gains(state, p, hw, neff, target, rows)

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


# population "pool": the finite-population correction
# ---------------------------------------------------------------------------------------
def pool_projection(hw: np.ndarray, neff: np.ndarray, t: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Expected half-width after ``t`` more trials of a stratum of ``rows`` trials in all (a finite pool).

    A process's half-width falls as ``h sqrt(n_eff / (n_eff + t))``; a pool's variance carries
    the finite-population correction, ``1/n - 1/N``. With ``n_eff`` the size the half-width
    ``h`` stands for without it (:meth:`RuleState.stop_neff
    <bayeseval.campaign.loop.rule_state.RuleState.stop_neff>`), the draws it stands for are
    ``n = n_eff N / (n_eff + N)`` (so that ``1/n - 1/N = 1/n_eff``), and after ``t`` more
    ``h sqrt(n_eff (1/(n + t) - 1/N))``: 0 at the pool's last row, the process's law as ``N``
    grows.

    Parameters
    ----------
    hw, neff, t, rows : numpy.ndarray
        Per stratum (broadcast): the half-width now, its effective size, further trials and the
        pool's trials (``inf`` for a process).

    Returns
    -------
    numpy.ndarray
        The projected half-widths.

    Examples
    --------
    A stratum of 400 trials at half-width 0.1 (n_eff 96): labelled to its end, 0; a process halves
    its width at four times the size.

    >>> pool_projection(np.array([0.1, 0.1]), np.array([96.0, 96.0]), np.array([400 - 77.4, 288.0]),
    ...                 np.array([400.0, np.inf])).round(3).tolist()
    [0.0, 0.05]
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(np.isfinite(rows), neff * rows / (neff + rows), neff)
        inv = np.where(np.isfinite(rows), 1.0 / (n + t) - 1.0 / rows, 1.0 / (n + t))
    return hw * np.sqrt(np.maximum(neff * inv, 0.0))


def _pool_width_gains(
    state: GoalState, p: np.ndarray, hw: np.ndarray, neff: np.ndarray, target: np.ndarray, rows: np.ndarray
) -> Gains:
    """:func:`width_gains` for a finite pool: the half-width projected by :func:`pool_projection`."""

    def every(t: np.ndarray) -> np.ndarray:
        h0 = pool_projection(hw, neff, t, rows)
        h1 = pool_projection(hw, neff, t + p, rows)
        excess = np.maximum(h0 - target, 0) - np.maximum(h1 - target, 0)
        return excess + 1e-3 * (h0 - h1)

    def one(j: int, t: float) -> float:
        h0, h1 = pool_projection(hw[j], neff[j], np.array([t, t + p[j]]), rows[j])
        return max(h0 - target[j], 0.0) - max(h1 - target[j], 0.0) + 1e-3 * (h0 - h1)

    cap = state.available > 0
    eligible = cap & ~state.stratum_done()
    return Gains(one, p, eligible if eligible.any() else cap, every)


def _pool_trials_needed(
    state: GoalState, need_t: np.ndarray, hw: np.ndarray, neff: np.ndarray, t0: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """:meth:`Each.labels_needed`'s trials for the strata of a finite pool: the exact plan of its interval.

    :func:`~bayeseval._kernels.finite_pool.pool_sample_size` at the stratum's own rate and the
    stop level, less the trials labelled and pending; where the stratum is still wider than the
    target although that plan is reached (an unlucky draw), the trials :func:`pool_projection`
    needs instead. At most the pool's trials left.
    """
    out = need_t.copy()
    target = state.target_halfwidth
    level = guarantee_stop_level(state.level)  # a pool campaign's guarantee is "stratum"
    own = (state.successes + 0.5) / (state.trials + 1.0)
    for j in np.flatnonzero(np.isfinite(rows) & (rows > 0)):
        left = max(float(rows[j] - state.trials[j] - t0[j]), 0.0)
        if hw[j] <= target or left == 0:
            out[j] = 0.0
            continue
        planned = pool_sample_size(target, int(rows[j]), float(own[j]), level) - state.trials[j] - t0[j]
        if planned <= 0:  # the plan is reached but the interval is still wide: project it
            n = neff[j] * rows[j] / (neff[j] + rows[j])
            planned = 1.0 / ((target / hw[j]) ** 2 / neff[j] + 1.0 / rows[j]) - n
        out[j] = min(max(float(planned), 1.0), left)
    return out
