"""What the goal and the guarantee decide from a campaign's state.

A :class:`RuleState` is a :class:`~bayeseval.campaign.loop.state.CampaignState` (counts per
stratum and the cached posterior) seen through the goal (:mod:`bayeseval.campaign.goals.goal`)
with its resolved settings and the guarantee (a :class:`~bayeseval.Guarantee`). From them
it derives, cached, the intervals each stratum stops on and reports, the decisions of the
decision goals and the gap verdict; the allocation rules (:mod:`bayeseval.campaign.loop.rules`)
and the goals read it. :class:`MetricStates` holds one per metric.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bayeseval._kernels.anytime import (
    anytime_decisions,
    confidence_sequence_bounds,
    tuned_concentration,
)
from bayeseval._kernels.binomial import binomial_bounds
from bayeseval._kernels.disparity import bonferroni_level, gap_interval
from bayeseval._kernels.guarantee import (
    DECISION_MIN_TRIALS,
    Guarantee,
    anytime_concentrations,
    as_guarantee,
    implied_size,
)
from bayeseval.campaign.goals.decide import AT_THRESHOLD
from bayeseval.campaign.goals.goal import Goal
from bayeseval.campaign.goals.registry import STATE_GOAL_DEFAULTS, goal_setting_view, state_goal
from bayeseval.campaign.loop.state import COUNT_SETTINGS, CampaignState, cached_pool_ci, counted_view
from bayeseval.counts.design import POPULATIONS
from bayeseval.models.posterior import Posterior

if TYPE_CHECKING:
    from bayeseval.campaign.goals.state import GoalState

__all__ = ["RuleState", "AT_THRESHOLD"]


# the state a rule sees
# ---------------------------------------------------------------------------------------
@dataclass(init=False)
class RuleState:
    """What a rule needs to know about a campaign, per stratum (arrays aligned to ``strata``).

    Parameters
    ----------
    counts : CampaignState
        The counts per stratum and the cached posterior; its fields (``strata``,
        ``successes``, ``trials``, ``labelled``, ``pending``, ``available``, ``weights``,
        ``model``, ...) and :attr:`posterior` read through this state.
    target_halfwidth : float, optional
        The target half-width of the width goals (default: the goal's, else 0.05).
    level : float
        The level of the intervals and decisions.
    goal : Goal or str
        The goal (:mod:`bayeseval.campaign.goals.goal`), or its name: ``"each"`` stratum's or the
        ``"overall"`` weighted rate's credible interval half-width at most
        ``target_halfwidth``, ``"decide"`` or ``"gap"``. The state keeps it as the goal object
        with the settings given here in place of its own
        (:func:`~bayeseval.campaign.goals.registry.state_goal`): the goal is the one source of
        :attr:`target_halfwidth`, :attr:`threshold`, :attr:`direction`, :attr:`tolerance` and
        :attr:`margin`, which read it. A setting the goal does not have is ignored.
    threshold : numpy.ndarray, optional
        Goal ``"decide"``: the threshold of each stratum's rate (one value per stratum; default
        the goal's).
    direction : {"below", "above"}, optional
        Goal ``"decide"``: a stratum meets its threshold when its rate is below it
        (error-type metrics) or above it (accuracy-type metrics); default the goal's, else
        ``"below"``.
    tolerance : float, optional
        Goal ``"gap"``: the largest acceptable max-min gap between the strata's rates.
    margin : float, optional
        Goal ``"decide"``: the indifference margin; a stratum whose interval lies within
        ``threshold +/- margin`` is decided ``"at the threshold"`` (see :meth:`at_threshold`).
        Default the goal's, else 0: off.
    guarantee : {"average", "stratum", "anytime"} or Guarantee
        What the per-stratum intervals and decisions promise (goals ``"each"``, ``"decide"``
        and ``"gap"``; goal ``"overall"`` is the same under all). ``"stratum"``: each
        stratum's interval is :meth:`Guarantee.bounds <bayeseval.Guarantee.bounds>` at
        :meth:`Guarantee.stop_level <bayeseval.Guarantee.stop_level>` (coverage at least
        ``level`` at every true rate of that stratum, also at the moment it stops) and
        decisions are anytime-valid tests
        (:func:`bayeseval._kernels.anytime.anytime_decisions`; wrong with probability at most
        ``1 - level`` per stratum whatever the look schedule). ``"anytime"``: the same, each
        stratum stopping on and reading its confidence sequence at ``level``
        (:meth:`anytime_intervals`). ``"average"`` (the default of a bare state; campaigns
        default to ``"stratum"``): a stratum stops when its pooled interval at ``level``
        reaches the target and is decided when its pooled ``P(meets)`` reaches ``level``;
        these cover on average over strata like these. Read back as the
        :class:`~bayeseval.Guarantee` (``guarantee.name`` is its name).
    anytime : bool
        The older spelling of ``guarantee="anytime"``: True with ``"stratum"``. Read back as
        whether the guarantee is the anytime one. Setting ``anytime`` on a state makes its
        per-stratum guarantee the anytime one or not; setting ``guarantee`` keeps ``anytime``.
    anytime_concentration : numpy.ndarray, optional
        The sequences' prior concentrations, one per stratum (default
        :func:`~bayeseval._kernels.guarantee.anytime_concentrations` of the strata's rows).
    population : {"process", "pool"}
        The population each stratum's rate is of (:attr:`Design.population <bayeseval.Design.population>`).
        ``"pool"``: the stratum's own rows, a finite population of :meth:`pool_trials` trials;
        under the per-stratum guarantee each stratum stops on and reads the exact hypergeometric
        interval of :func:`~bayeseval._kernels.finite_pool.pool_ci` at the stop level (a
        stratum labelled to its last trial has width 0), and the goals project its half-width
        with the finite-population correction (:meth:`pool_trials`). Default ``"process"``.

    Examples
    --------
    >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 100], target_halfwidth=0.1)
    >>> st.goal, st.target_halfwidth, st.weights.round(3).tolist()
    (Each(halfwidth=0.1), 0.1, [0.48, 0.52])
    """

    counts: CampaignState
    level: float
    goal: Goal
    guarantee: Guarantee
    anytime: bool
    anytime_concentration: np.ndarray | None
    population: str
    _decision: dict = field(default_factory=dict, init=False, repr=False)
    _adaptive: dict = field(default_factory=dict, init=False, repr=False)

    def __init__(
        self,
        counts: CampaignState,
        target_halfwidth: float | None = None,
        level: float = 0.95,
        goal: Goal | str = "each",
        threshold: np.ndarray | None = None,
        direction: str | None = None,
        tolerance: float | None = None,
        margin: float | None = None,
        guarantee: Guarantee | str = "average",
        anytime: bool = False,
        anytime_concentration: np.ndarray | None = None,
        population: str = "process",
    ) -> None:
        given = {
            "target_halfwidth": target_halfwidth,
            "threshold": threshold,
            "direction": direction,
            "margin": margin,
            "tolerance": tolerance,
        }
        self.counts = counts
        self.level = level
        self.goal = state_goal(goal, given, STATE_GOAL_DEFAULTS)
        g = as_guarantee(guarantee, anytime=anytime)
        object.__setattr__(self, "guarantee", g)
        object.__setattr__(self, "anytime", g.sequential)
        self.anytime_concentration = anytime_concentration
        if population not in POPULATIONS:
            raise ValueError(f"population must be one of {list(POPULATIONS)}, got {population!r}")
        self.population = population
        self._decision = {}
        self._adaptive = {}

    strata = counted_view("strata")
    successes = counted_view("successes")
    trials = counted_view("trials")
    labelled = counted_view("labelled")
    pending = counted_view("pending")
    available = counted_view("available")
    weights = counted_view("weights")
    trial_known = counted_view("trial_known")
    model = counted_view("model")
    prior = counted_view("prior")
    prior_mean = counted_view("prior_mean")

    target_halfwidth = goal_setting_view("target_halfwidth")
    threshold = goal_setting_view("threshold")
    direction = goal_setting_view("direction")
    tolerance = goal_setting_view("tolerance")
    margin = goal_setting_view("margin")

    def __setattr__(self, name: str, value: Any) -> None:
        """Keep ``guarantee`` (a :class:`~bayeseval.Guarantee`) and ``anytime`` in step."""
        if name == "guarantee":  # the ``anytime`` flag stays
            g = as_guarantee(value, anytime=self.anytime)
        elif name == "anytime":  # the per-stratum or pooled choice stays
            g = as_guarantee(self.guarantee.scope, anytime=value)
        else:
            object.__setattr__(self, name, value)
            return
        object.__setattr__(self, "guarantee", g)
        object.__setattr__(self, "anytime", g.sequential)

    @classmethod
    def from_counts(cls, successes: Any, trials: Any, *, available: Any, **kwargs: Any) -> RuleState:
        """Build a state from arrays: :meth:`CampaignState.from_counts` plus the goal's settings.

        Parameters
        ----------
        successes, trials : array-like of int
            Counted successes and trials per stratum.
        available : array-like of int
            Eligible rows never proposed, per stratum.
        **kwargs
            The :class:`CampaignState` settings (``labelled``, ``pending``, ``weights``,
            ``strata``, ``trial_known``, ``model``, ``prior``, ``prior_mean``) and the further
            :class:`RuleState` fields (``target_halfwidth``, ``level``, ``goal``, ...).

        Returns
        -------
        RuleState
            The state, with nothing cached yet.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 300], model="independent")
        >>> st.weights.round(3).tolist(), st.model, st.counts.model
        ([0.267, 0.733], 'independent', 'independent')
        """
        counted = {k: kwargs.pop(k) for k in COUNT_SETTINGS if k in kwargs}
        return cls(CampaignState.from_counts(successes, trials, available=available, **counted), **kwargs)

    def with_counts(self, **changes: Any) -> RuleState:
        """A new state with the same goal and guarantee on counts changed by ``changes``.

        Parameters
        ----------
        **changes
            :class:`CampaignState` fields to replace (``successes``, ``pending``, ``model``, ...).

        Returns
        -------
        RuleState
            With nothing cached.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 300], target_halfwidth=0.1)
        >>> new = st.with_counts(model="independent")
        >>> new.model, new.goal, st.model
        ('independent', Each(halfwidth=0.1), 'auto')
        """
        return dataclasses.replace(self, counts=dataclasses.replace(self.counts, **changes))

    # -- derived quantities (cached) ------------------------------------------------------
    @property
    def posterior(self) -> Posterior:
        """The campaign's current posterior (:attr:`CampaignState.posterior`)."""
        return self.counts.posterior

    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-stratum equal-tailed credible intervals of the posterior at ``level`` (cached).

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.
        """
        return self.counts.interval(self.level)

    def halfwidths(self) -> np.ndarray:
        """Per-stratum credible-interval half-widths at ``level``.

        Returns
        -------
        numpy.ndarray
            Half the width of each stratum's credible interval.
        """
        lo, hi = self.intervals()
        return (hi - lo) / 2.0

    def per_stratum(self) -> bool:
        """Whether the per-stratum guarantee applies: ``guarantee="stratum"`` and a goal other than ``"overall"``.

        Returns
        -------
        bool
            True when the guaranteed intervals and the anytime tests are in force.
        """
        return self.guarantee.per_stratum and self.goal.per_stratum

    def guaranteed_intervals(self, level: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every stratum's own interval under the per-stratum guarantee (cached).

        :meth:`Guarantee.bounds <bayeseval.Guarantee.bounds>` of the state's guarantee
        (``Guarantee.stratum()`` under ``"average"``, which has none of its own) at its
        :meth:`~bayeseval.Guarantee.stop_level`: the interval the width goal stops on and the
        campaign reports. With a ``level``, ``Guarantee.stratum()``'s interval at that level.

        Parameters
        ----------
        level : float, optional
            Interval level of the stratum guarantee's interval.

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.
        """
        if level is not None:
            return self._own_intervals(Guarantee.stratum(), float(level))
        g = self.guarantee if self.guarantee.per_stratum else Guarantee.stratum()
        if self.population == "pool" and not g.sequential and ("units",) not in self._adaptive:
            return self.pool_intervals(g.stop_level(self.level))
        return self._own_intervals(g, g.stop_level(self.level))

    def pool_trials(self) -> np.ndarray:
        """Trials of each stratum's finite pool: its trials, pending and available rows (population ``"pool"``).

        Infinite under population ``"process"`` (the process has no last row). Population
        ``"pool"`` is for metrics whose trials the prediction fixes, so every pending or
        available row is a trial.

        Returns
        -------
        numpy.ndarray
            One float per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([3, 0], [10, 0], available=[90, 40], population="pool")
        >>> st.pool_trials().tolist(), RuleState.from_counts([3], [10], available=[90]).pool_trials().tolist()
        ([100.0, 40.0], [inf])
        """
        if self.population != "pool":
            return np.full(len(self.strata), np.inf)
        return (self.trials + self.pending + self.available).astype(float)

    def pool_intervals(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        """Every stratum's exact interval for its pool rate at ``level`` (population ``"pool"``), cached.

        :func:`~bayeseval._kernels.finite_pool.pool_ci` of the stratum's successes and trials
        among its :meth:`pool_trials`: coverage of the pool's own rate at least ``level`` for
        every number of successes the pool may hold; width 0 once every trial is labelled;
        ``[0, 1]`` without trials (or without rows).

        Parameters
        ----------
        level : float
            Interval level (the campaign stops on :meth:`Guarantee.stop_level
            <bayeseval.Guarantee.stop_level>` of its level).

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum.

        Examples
        --------
        3 successes in 10 trials of a stratum of 50 (``pool_ci(3, 10, 50, 0.95)``: 5 to 31
        successes), and a stratum labelled to its last row:

        >>> st = RuleState.from_counts([3, 4], [10, 20], available=[40, 0], population="pool")
        >>> lo, hi = st.pool_intervals(0.95)
        >>> round(float(lo[0]) * 50), round(float(hi[0]) * 50), float(lo[1]), float(hi[1])
        (5, 31, 0.2, 0.2)
        """
        key = ("pool", float(level))
        if key not in self._adaptive:
            rows = self.pool_trials()
            lo, hi = np.zeros(len(rows)), np.ones(len(rows))
            has = (self.trials > 0) & (rows > 0)
            if has.any():
                lo[has], hi[has] = cached_pool_ci(self.successes[has], self.trials[has], rows[has], float(level))
            self._adaptive[key] = (lo, hi)
        return self._adaptive[key]

    def _own_intervals(self, guarantee: Guarantee, level: float) -> tuple[np.ndarray, np.ndarray]:
        """``guarantee``'s bounds of every stratum at ``level``, cached."""
        key = (guarantee.name, level)
        if key not in self._adaptive:
            concentration = self._sequence_concentration() if guarantee.sequential else None
            self._adaptive[key] = guarantee.bounds(self.successes, self.trials, level, concentration)
        return self._adaptive[key]

    def _sequence_concentration(self) -> np.ndarray:
        """``anytime_concentration``, or each stratum's concentration tuned for its rows and the goal's target."""
        if self.anytime_concentration is not None:
            return self.anytime_concentration
        hw = self.goal.stratum_halfwidth
        return anytime_concentrations(self.available + self.labelled + self.pending, self.level, hw)

    def anytime_intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Every stratum's confidence sequence at ``level`` (``Guarantee.anytime()``), cached.

        :meth:`Guarantee.anytime().bounds <bayeseval.Guarantee.bounds>` with ``anytime_concentration``
        (default: tuned for each stratum's rows and the goal's target,
        :func:`~bayeseval._kernels.guarantee.anytime_concentrations`). The sequence covers the
        stratum's rate at every number of labels at once with probability at least ``level``,
        so it needs no compensation for stopping when it is narrow.

        Returns
        -------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum (``[0, 1]`` without trials).

        Examples
        --------
        >>> st = RuleState.from_counts([10, 0], [100, 0], available=[900, 1000], guarantee="stratum",
        ...                            anytime=True, anytime_concentration=np.array([2.0, 2.0]))
        >>> lo, hi = st.anytime_intervals()
        >>> round(float(lo[0]), 4), round(float(hi[0]), 4), st.read_intervals()[0].tolist()
        (0.0258, 0.2193, ['anytime', 'anytime'])
        """
        anytime = Guarantee.anytime()
        return self._own_intervals(anytime, anytime.stop_level(self.level))

    def use_intervals(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Make ``lower``/``upper`` every stratum's guaranteed interval (a proxy campaign's own).

        They replace ``Guarantee.stratum()``'s bounds at its stop level in :meth:`guaranteed_intervals`,
        so the width goal stops on them, the rules scale their widths and :meth:`read_intervals`
        reports them.

        Parameters
        ----------
        lower, upper : numpy.ndarray
            Interval ends at ``Guarantee.stratum().stop_level(level)``, one per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 2], [20, 30], available=[100, 100], target_halfwidth=0.1,
        ...                            guarantee="stratum")
        >>> st.use_intervals(np.array([0.0, 0.01]), np.array([0.1, 0.2]))
        >>> st.stop_halfwidths().tolist()
        [0.05, 0.095]
        """
        stratum = Guarantee.stratum()
        self._adaptive[(stratum.name, stratum.stop_level(self.level))] = (
            np.asarray(lower, dtype=float),
            np.asarray(upper, dtype=float),
        )

    def use_units(
        self,
        lower: np.ndarray,
        upper: np.ndarray,
        estimate: np.ndarray,
        n_units: np.ndarray,
        pool_units: np.ndarray | None = None,
    ) -> None:
        """Make every stratum read and stop on its units interval (``design.cluster``).

        As :meth:`use_intervals`, and :meth:`read_intervals` names the interval ``"units"``
        (under the anytime guarantee the ends are each stratum's confidence sequence at
        ``level``, :func:`~bayeseval.campaign.loop.units.units_sequences`, and the interval is
        named ``"anytime"``),
        :meth:`read_means` gives ``estimate`` (the units' ratio estimate) and :meth:`stop_neff`
        is the number of labelled units (at least 1): the betting interval's half-width
        shrinks like ``1 / sqrt(units)``, so ``t`` more units are expected to bring it to
        ``h sqrt(n / (n + t))``. A stratum without a labelled unit plans with ``z^2`` (``z`` of
        the stop level): the worst case of a mean in ``[0, 1]``, ``h = z sqrt(1/4 / t)``.

        Parameters
        ----------
        lower, upper : numpy.ndarray
            Interval ends at ``Guarantee.stratum().stop_level(level)`` (at ``level`` under the
            anytime guarantee), one per stratum.
        estimate : numpy.ndarray
            Each stratum's estimate (NaN without units).
        n_units : numpy.ndarray
            Labelled units per stratum.
        pool_units : numpy.ndarray, optional
            Population ``"pool"``: the units of each stratum's pool, ``N``. The half-width of
            ``n`` units drawn without replacement stands for ``n N / (N - n)`` draws with
            replacement (``1/n - 1/N``, the finite-population correction), so :meth:`stop_neff`
            is that, and the goals project it with :meth:`pool_trials` (the units, here).

        Examples
        --------
        >>> st = RuleState.from_counts([3, 0], [4, 0], available=[40, 30], target_halfwidth=0.1,
        ...                            guarantee="stratum")
        >>> st.use_units(np.array([0.2, 0.0]), np.array([0.9, 1.0]), np.array([0.6, np.nan]), np.array([4, 0]))
        >>> st.read_intervals()[0].tolist(), st.stop_neff().round(2).tolist(), st.read_means().tolist()
        (['units', 'units'], [4.0, 4.45], [0.6, nan])
        """
        from scipy.stats import norm

        if self.guarantee.sequential:  # the confidence sequences at the level (no compensated stop level)
            g = Guarantee.anytime()
            self._adaptive[(g.name, g.stop_level(self.level))] = (
                np.asarray(lower, dtype=float),
                np.asarray(upper, dtype=float),
            )
        else:
            self.use_intervals(lower, upper)
        read = Guarantee.anytime() if self.guarantee.sequential else Guarantee.stratum()
        z = norm.ppf(0.5 + read.stop_level(self.level) / 2.0)
        n = np.asarray(n_units, dtype=float)
        neff = np.where(n > 0, n, z**2)
        if pool_units is not None:
            big = np.asarray(pool_units, dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                neff = np.where((n > 0) & (n < big), n * big / (big - n), neff)
            neff = np.where((n > 0) & (n >= big), 1e12, neff)  # every unit labelled: width 0
        self._adaptive[("units",)] = (np.asarray(estimate, dtype=float), neff)
        self._adaptive[("units_n",)] = (n, n)

    def use_units_gap(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Make :meth:`gap` read each stratum's units interval at the gap's Bonferroni level (``design.cluster``).

        Call after :meth:`use_units`. ``lower``/``upper`` are the units intervals at
        ``bonferroni_level(Guarantee.stratum().stop_level(level), K)``; :meth:`gap` projects them
        to the gap's interval with the units' estimates (:meth:`read_means`) as the rates.

        Parameters
        ----------
        lower, upper : numpy.ndarray
            Interval ends, one per stratum (``[0, 1]`` without units).

        Examples
        --------
        >>> st = RuleState.from_counts([3, 1], [4, 4], available=[40, 40], guarantee="stratum", goal="gap",
        ...                            tolerance=0.1)
        >>> st.use_units(np.array([0.5, 0.0]), np.array([0.9, 0.4]), np.array([0.7, 0.2]), np.array([4, 4]))
        >>> st.use_units_gap(np.array([0.6, 0.0]), np.array([0.95, 0.45]))
        >>> st.gap()["verdict"], round(st.gap()["gap"], 2), round(st.gap()["lower"], 2)  # 0.6 - 0.45 > 0.1
        ('outside', 0.5, 0.15)
        """
        self._adaptive[("units_gap",)] = (np.asarray(lower, dtype=float), np.asarray(upper, dtype=float))
        self._decision.pop("gap", None)

    def use_units_overall(self, mean: float, lower: float, upper: float) -> None:
        """Make :meth:`overall` the weighted rate's interval combined from the units intervals (``design.cluster``).

        Parameters
        ----------
        mean, lower, upper : float
            The weighted rate's estimate and interval
            (:func:`~bayeseval.estimate.proxy.weighted_interval` of the strata's units intervals).

        Examples
        --------
        >>> st = RuleState.from_counts([3, 1], [4, 4], available=[40, 40], guarantee="stratum", goal="overall")
        >>> st.use_units_overall(0.4, 0.2, 0.6)
        >>> st.overall()
        (0.4, 0.2, 0.6)
        """
        self._adaptive[("units_overall",)] = (np.array([mean, lower, upper], dtype=float),) * 2

    def _units_read(self) -> bool:
        """Whether the strata read their units intervals (:meth:`use_units` under a per-stratum guarantee)."""
        return self.per_stratum() and ("units",) in self._adaptive

    def stop_neff(self) -> np.ndarray:
        """Effective sample sizes the expected-width rules scale :meth:`stop_halfwidths` with.

        The posterior's ``n_eff`` under ``guarantee="average"``. Under ``"stratum"`` the size
        the guaranteed half-width stands for, ``z^2 m (1 - m) / h^2`` with ``m`` the stratum's
        own ``(s + 1/2) / (n + 1)``: the guaranteed interval borrows from the other strata only
        as far as its data look typical, and this size says how far it did, so ``t`` more
        trials are expected to bring the half-width to ``h sqrt(n_eff / (n_eff + t))`` (the
        square-root law of the interval's own width), not the pooled interval's.

        Returns
        -------
        numpy.ndarray
            One effective sample size per stratum.
        """
        if not self.per_stratum():
            return self.posterior.n_eff().to_numpy()
        if ("units",) in self._adaptive:
            return self._adaptive[("units",)][1]
        own = (self.successes + 0.5) / (self.trials + 1.0)
        return implied_size(self.stop_halfwidths(), own, self.guarantee.stop_level(self.level))

    def stop_halfwidths(self) -> np.ndarray:
        """Per-stratum half-widths the width goal stops on.

        Under ``guarantee="stratum"``: of :meth:`guaranteed_intervals`; under ``"average"``:
        of the posterior interval at ``level`` (:meth:`halfwidths`).

        Returns
        -------
        numpy.ndarray
            One half-width per stratum.
        """
        if self.per_stratum():
            lo, hi = self.guaranteed_intervals()
            return (hi - lo) / 2.0
        return self.halfwidths()

    def read_intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The interval each stratum reports at ``level``, and which one it is.

        Returns
        -------
        read : numpy.ndarray of str
            ``"guaranteed"`` under ``guarantee="stratum"`` and ``"anytime"`` under the anytime
            guarantee (:meth:`guaranteed_intervals`; the guarantee's
            :attr:`~bayeseval.Guarantee.read`), ``"pool"`` for population ``"pool"``
            (:meth:`pool_intervals`), ``"units"`` for a clustered campaign (:meth:`use_units`), else ``"pooled"`` (``"own"`` for the independent model).
        lower, upper : numpy.ndarray
            Its ends.
        """
        k = len(self.strata)
        if self.per_stratum() or ("units",) in self._adaptive:  # a clustered campaign reads units under any goal
            glo, ghi = self.guaranteed_intervals()
            read = "pool" if self.population == "pool" else self.guarantee.read
            read = "units" if ("units",) in self._adaptive and not self.guarantee.sequential else read
            return np.full(k, read, dtype=object), glo, ghi
        lo, hi = self.intervals()
        return np.full(k, "own" if self.model == "independent" else "pooled", dtype=object), lo, hi

    def read_means(self) -> np.ndarray:
        """The point estimate of the interval each stratum reports (:meth:`read_intervals`).

        The observed rate ``successes / trials`` for the stratum's own guaranteed or anytime
        interval (NaN without trials), the posterior mean for the pooled (or own) interval.

        Returns
        -------
        numpy.ndarray
            One estimate per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([3, 0], [10, 0], available=[90, 100], guarantee="stratum")
        >>> st.read_means().tolist()
        [0.3, nan]
        """
        if ("units",) in self._adaptive:
            return self._adaptive[("units",)][0]
        if self.per_stratum():
            s, n = np.asarray(self.successes, float), np.asarray(self.trials, float)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(n > 0, s / n, np.nan)
        return self.posterior.mean().to_numpy()

    def read_halfwidths(self) -> np.ndarray:
        """Per-stratum half-widths of the interval each stratum reports (:meth:`read_intervals`).

        Returns
        -------
        numpy.ndarray
            One half-width per stratum.
        """
        _, lo, hi = self.read_intervals()
        return (hi - lo) / 2.0

    def overall(self) -> tuple[float, float, float]:
        """Mean and interval at ``level`` of the weighted rate (:meth:`CampaignState.overall`).

        A clustered campaign (:meth:`use_units_overall`): the strata's units estimates weighted,
        and their units intervals at the stop level combined by MOVER.

        Returns
        -------
        mean, lower, upper : float
            Posterior mean of the weighted rate and its interval at ``level``.
        """
        if ("units_overall",) in self._adaptive:
            mean, lower, upper = self._adaptive[("units_overall",)][0].tolist()
            return mean, lower, upper
        return self.counts.overall(self.level)

    def p_trial(self) -> np.ndarray:
        """Posterior mean probability that a labelled row is a trial (:meth:`CampaignState.p_trial`).

        Returns
        -------
        numpy.ndarray
            One probability per stratum.
        """
        return self.counts.p_trial()

    def stratum_done(self) -> np.ndarray:
        """Strata that meet the goal (:meth:`goal_met`).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.
        """
        return self.goal_met()

    def exhausted(self) -> np.ndarray:
        """Strata with no row left to propose (:meth:`CampaignState.exhausted`).

        Returns
        -------
        numpy.ndarray of bool
            True where ``available`` is 0.
        """
        return self.counts.exhausted()

    def is_done(self) -> bool:
        """Whether the goal is met (or nothing is left to label).

        Returns
        -------
        bool
            True when the ``goal`` is reached, or every unfinished stratum is exhausted
            with nothing pending.
        """
        return self.goal.is_done(self)

    def reuse_fits(self, earlier: RuleState | None) -> bool:
        """Take the posterior and the guaranteed intervals ``earlier`` computed, when they are this state's.

        Both are functions of the successes and trials per stratum and of the settings alone
        (never of the pending or available rows), so a state whose counts and settings equal
        ``earlier``'s reads them back instead of computing them again: a campaign round looks
        at the same counts when it proposes and when it reports its status. The anytime and
        pool intervals (which depend on the rows left) are not taken.

        Parameters
        ----------
        earlier : RuleState or None
            A state of the same campaign, built before this one (nothing is taken from None).

        Returns
        -------
        bool
            Whether anything was taken.

        Examples
        --------
        >>> a = RuleState.from_counts([1, 2, 3], [20, 30, 40], available=[80, 70, 60], guarantee="stratum")
        >>> (lo, hi), post = a.guaranteed_intervals(), a.posterior
        >>> b = RuleState.from_counts([1, 2, 3], [20, 30, 40], available=[70, 70, 60], pending=[10, 0, 0],
        ...                           guarantee="stratum")
        >>> b.reuse_fits(a), b.guaranteed_intervals()[0] is lo, b.posterior is post
        (True, True, True)
        """
        if earlier is None or earlier is self or not self._same_fit_inputs(earlier):
            return False
        mine, theirs = self.counts, earlier.counts
        if theirs._posterior is not None and mine._posterior is None:
            mine._posterior = theirs._posterior
            mine._intervals = dict(theirs._intervals)
        fixed = Guarantee.stratum().name  # the guaranteed (not sequential) interval: a function of the counts
        for key, value in earlier._adaptive.items():
            if key[0] == fixed and key not in self._adaptive:
                self._adaptive[key] = value
        return True

    def _same_fit_inputs(self, other: RuleState) -> bool:
        """Whether ``other`` has this state's counts and the settings its posterior and guaranteed intervals read."""
        a, b = self.counts, other.counts
        if (a.model, a.trial_known, self.level, self.guarantee, self.anytime, self.population) != (
            b.model,
            b.trial_known,
            other.level,
            other.guarantee,
            other.anytime,
            other.population,
        ):
            return False
        if self.anytime or self.population == "pool" or ("units",) in other._adaptive:
            return False
        same_prior_mean = (a.prior_mean is None and b.prior_mean is None) or (
            a.prior_mean is not None and b.prior_mean is not None and np.array_equal(a.prior_mean, b.prior_mean)
        )
        return (
            same_prior_mean
            and (a.prior is b.prior or a.prior == b.prior)
            and (a.strata is b.strata or a.strata.equals(b.strata))
            and np.array_equal(a.successes, b.successes)
            and np.array_equal(a.trials, b.trials)
        )

    def invalidate(self) -> None:
        """Drop the cached posterior, intervals and decisions after the counts changed."""
        self.counts.invalidate()
        self._decision = {}
        self._adaptive = {}

    # -- decision goals ("decide" and "gap") -----------------------------------------------
    def pooled_decided(self) -> np.ndarray:
        """Strata whose posterior ``P(meets)`` alone is decided (at least or at most one minus the level).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum (goal ``"decide"``).
        """
        p, lv = self.p_meets(), self.level
        return (p >= lv) | (p <= 1.0 - lv)

    def p_meets(self) -> np.ndarray:
        """Posterior probability that each stratum's rate meets its threshold (goal ``"decide"``).

        ``P(theta_k < threshold_k)`` for direction ``"below"`` and ``P(theta_k >
        threshold_k)`` for ``"above"``, from the exact CDF of the posterior Beta mixture.

        Returns
        -------
        numpy.ndarray
            One probability per stratum.

        Raises
        ------
        ValueError
            When the state has no ``threshold``.

        Examples
        --------
        >>> st = RuleState.from_counts([2], [100], available=[0], model="independent",
        ...                            goal="decide", threshold=np.array([0.05]))
        >>> round(float(st.p_meets()[0]), 4)  # scipy.stats.beta.cdf(0.05, 3, 99)
        0.8858
        """
        if self.threshold is None:
            raise ValueError(f"p_meets needs a threshold (goal='decide'), got threshold={self.threshold!r}")
        if "p_meets" not in self._decision:
            below = self.posterior.prob_below(np.asarray(self.threshold, dtype=float)).to_numpy()
            self._decision["p_meets"] = below if self.direction == "below" else 1.0 - below
        return self._decision["p_meets"]

    def goal_met(self) -> np.ndarray:
        """Strata that meet the goal.

        Goal ``"each"``: the half-width it stops on (:meth:`stop_halfwidths`) within the
        target. ``"decide"``: decided on one side of the threshold (:meth:`side_decided`) or
        at it (:meth:`at_threshold`). ``"gap"``: the verdict on the max-min gap is decided
        (every stratum alike). ``"overall"``: the weighted rate's half-width is within the
        target (every stratum alike).

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 30], [200, 200], available=[0, 0], model="independent",
        ...                            goal="decide", threshold=np.array([0.1, 0.1]))
        >>> st.goal_met().tolist()
        [True, True]
        """
        return self.goal.met(self)

    def side_decided(self) -> np.ndarray:
        """Strata decided on one side of the threshold: the ``P(meets)`` part of :meth:`goal_met`.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum (goal ``"decide"``).
        """
        if self.per_stratum():
            return self.anytime_decisions() != "undecided"
        return self.pooled_decided()

    def at_threshold(self) -> np.ndarray:
        """Strata whose rate is known to lie within the indifference margin of the threshold.

        Goal ``"decide"`` with ``margin > 0``: the stratum's equal-tailed credible interval at
        ``level`` (exact quantiles of the posterior Beta mixture) lies within
        ``[threshold - margin, threshold + margin]``. Such a stratum is decided ``"at the threshold"``: labelling it further could only tell on which
        side of the threshold a rate lies that is, for the user's purpose, on it. Under
        ``guarantee="stratum"`` the interval is instead the stratum's confidence sequence
        (:func:`bayeseval._kernels.anytime.confidence_sequence_bounds` at :meth:`anytime_level`,
        valid at every look) and the stratum needs at least 5 trials.

        Returns
        -------
        numpy.ndarray of bool
            One value per stratum; all False without a margin or for other goals.

        Examples
        --------
        123 errors in 1,000 trials against a threshold of 0.12: the 95% interval
        (0.103, 0.144) is within 0.12 +/- 0.03, not within 0.12 +/- 0.01.

        >>> st = RuleState.from_counts([123], [1000], available=[0], model="independent",
        ...                            goal="decide", threshold=np.array([0.12]), margin=0.03)
        >>> st.at_threshold().tolist(), st.decisions().tolist()
        ([True], ['at the threshold'])
        >>> RuleState.from_counts([123], [1000], available=[0], model="independent", goal="decide",
        ...                       threshold=np.array([0.12]), margin=0.01).decisions().tolist()
        ['undecided']
        """
        k = len(self.strata)
        if not self.goal.has_threshold or not self.margin:
            return np.zeros(k, bool)
        if "at" not in self._decision and self.per_stratum():
            self._decision["at"] = self._sequence_within()
        if "at" not in self._decision:
            thr = np.asarray(self.threshold, dtype=float)
            lo, hi = self.posterior.interval(self.level)
            self._decision["at"] = (lo >= thr - self.margin) & (hi <= thr + self.margin) & (self.trials > 0)
        return self._decision["at"]

    def decisions(self) -> np.ndarray:
        """Each stratum's decision: ``"meets"``, ``"fails"``, ``"at the threshold"`` or ``"undecided"``.

        Goal ``"decide"``. Under ``guarantee="stratum"`` the anytime-valid tests
        (:meth:`anytime_decisions`); under ``"average"`` the pooled ``P(meets)`` at ``level``
        (:meth:`pooled_decided`). ``"at the threshold"`` (only with a ``margin``, see
        :meth:`at_threshold`) is given to a stratum not decided on either side.

        Returns
        -------
        numpy.ndarray of str
            One value per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([1, 30, 18], [200, 200, 200], available=[0, 0, 0],
        ...                            model="independent", goal="decide", threshold=np.array([0.1] * 3))
        >>> st.decisions().tolist()
        ['meets', 'fails', 'undecided']

        """
        if self.per_stratum():
            out = self.anytime_decisions().copy()
            out[self.at_threshold() & (out == "undecided")] = AT_THRESHOLD
            return out
        p = self.p_meets()
        out = np.where(p >= 0.5, "meets", "fails").astype(object)
        out[self.at_threshold() & ~self.side_decided()] = AT_THRESHOLD
        out[~self.stratum_done()] = "undecided"
        return out

    def anytime_level(self) -> float:
        """Level of each anytime test under ``guarantee="stratum"``.

        ``level``; with a ``margin``, ``1 - (1 - level) / 2`` for the two side tests and
        for the confidence sequence of :meth:`at_threshold`, so that a wrong decision of
        either kind has probability at most ``1 - level`` (union bound).

        Returns
        -------
        float
            The level of each test and of the confidence sequence.
        """
        return self.level if not self.margin else 1.0 - (1.0 - self.level) / 2.0

    def decision_concentration(self) -> float:
        """Prior concentration of the anytime tests: tuned for the median stratum size.

        :func:`bayeseval._kernels.anytime.tuned_concentration` at the median over strata of
        their rows (labelled, pending and available, which stays the same through a
        campaign), clipped to 20-4,000; fixed before any label, as the guarantee needs.

        Returns
        -------
        float
            The concentration ``c`` of the ``Beta(c t, c (1 - t))`` prior of the tests.
        """
        size = np.median(self.available + self.labelled + self.pending) if len(self.strata) else 20
        return tuned_concentration(int(np.clip(size, 20, 4000)), self.anytime_level())

    def anytime_decisions(self) -> np.ndarray:
        """Each stratum's anytime-valid decision (``guarantee="stratum"``), cached.

        :func:`bayeseval._kernels.anytime.anytime_decisions` at :meth:`anytime_level` with
        :meth:`decision_concentration` and at least 5 trials of the stratum's own: the
        probability that a stratum is ever decided wrongly is at most ``1 - level`` whatever
        the batch size and number of looks. A clustered campaign (:meth:`use_units`) decides
        on the side of the threshold its units interval at the stop level lies on
        (``_units_decisions``; measured in ``tests/campaign/test_units_goals.py``: no wrong
        decision in 200 seeded campaigns per stratum, rates 0.3 and 0.45 against 0.38).

        Returns
        -------
        numpy.ndarray of str
            ``"meets"``, ``"fails"`` or ``"undecided"`` per stratum.

        Examples
        --------
        >>> st = RuleState.from_counts([2, 60, 18], [300, 300, 200], available=[0, 0, 0], goal="decide",
        ...                            threshold=np.array([0.1] * 3), guarantee="stratum")
        >>> st.anytime_decisions().tolist()
        ['meets', 'fails', 'undecided']
        """
        if "anytime" not in self._decision and self._units_read():
            self._decision["anytime"] = self._units_decisions()
        if "anytime" not in self._decision:
            k = len(self.strata)
            thr = np.broadcast_to(np.asarray(self.threshold, dtype=float), (k,))
            out = np.full(k, "undecided", dtype=object)
            lv, c = self.anytime_level(), self.decision_concentration()
            for t in np.unique(thr):
                sel = thr == t
                out[sel] = anytime_decisions(
                    self.successes[sel],
                    self.trials[sel],
                    float(t),
                    level=lv,
                    direction=self.direction,
                    concentration=c,
                    min_trials=DECISION_MIN_TRIALS,
                )
            self._decision["anytime"] = out
        return self._decision["anytime"]

    def _units_decisions(self) -> np.ndarray:
        """:meth:`anytime_decisions` of a clustered campaign: the side of the threshold its units interval is on.

        ``"meets"`` when the stratum's units interval at the stop level lies strictly on the
        meeting side of the threshold (below it for direction ``"below"``), ``"fails"`` when it
        lies strictly on the other side. One interval gives both, so a wrong decision needs
        the interval to miss the rate at stop.
        """
        k = len(self.strata)
        thr = np.broadcast_to(np.asarray(self.threshold, dtype=float), (k,))
        lo, hi = self.guaranteed_intervals()
        below, above = hi < thr, lo > thr
        meets, fails = (below, above) if self.direction == "below" else (above, below)
        out = np.full(k, "undecided", dtype=object)
        out[meets] = "meets"
        out[fails] = "fails"
        return out

    def _sequence_within(self) -> np.ndarray:
        """``at_threshold`` under ``guarantee="stratum"``: the confidence sequence within the band."""
        k = len(self.strata)
        if not self.margin:
            return np.zeros(k, bool)
        thr = np.broadcast_to(np.asarray(self.threshold, dtype=float), (k,))
        if self._units_read():  # the units interval at the stop level within the band
            lo, hi = self.guaranteed_intervals()
            seen = self._adaptive[("units_n",)][0] > 0
            return seen & (lo >= thr - self.margin) & (hi <= thr + self.margin)
        used = self.trials >= DECISION_MIN_TRIALS
        inside = np.zeros(k, bool)
        if used.any():
            lo, hi = confidence_sequence_bounds(
                self.successes[used], self.trials[used], self.anytime_level(), self.decision_concentration()
            )
            inside[used] = (lo >= thr[used] - self.margin) & (hi <= thr[used] + self.margin)
        return inside

    def gap(self) -> dict[str, Any]:
        """The max-min gap across the strata and its verdict against ``tolerance`` (goal ``"gap"``).

        The audit's rule (:func:`bayeseval.fairness`), on each stratum's own counts so that
        pooling cannot narrow a gap: Clopper-Pearson intervals at the Bonferroni level
        ``1 - (1 - decision_level()) / K`` are projected to an interval of the gap
        (:func:`bayeseval._kernels.disparity.gap_interval`, coverage at least the level for every
        configuration of true rates at a fixed sample size); the verdict is ``"outside"`` when
        its lower end exceeds the tolerance, ``"within tolerance"`` when its upper end is at
        most the tolerance, ``"undecided"`` otherwise. Strata without trials are left out.
        A clustered campaign (:meth:`use_units_gap`) projects each stratum's units interval at
        the Bonferroni level of the stop level, ``1 - (1 - stop level) / K``, with the units'
        estimates as the rates.

        Returns
        -------
        dict
            ``gap`` (max - min of the observed rates), ``lower``, ``upper``, ``level`` (the
            per-stratum Bonferroni level), ``tolerance``, ``verdict`` and ``bounds`` (each
            stratum's interval; ``[0, 1]`` without trials).

        Examples
        --------
        >>> st = RuleState.from_counts([10, 12], [1000, 1000], available=[0, 0], model="independent",
        ...                            goal="gap", tolerance=0.02)
        >>> st.gap()["verdict"]
        'within tolerance'
        """
        if self.tolerance is None:
            raise ValueError(f"gap needs a tolerance (goal='gap'), got tolerance={self.tolerance!r}")
        if "gap" not in self._decision:
            level = bonferroni_level(self.level, len(self.strata))
            s, n = self.successes.astype(float), self.trials.astype(float)
            lo, hi = np.zeros(len(n)), np.ones(len(n))
            used = n > 0
            if self._units_read() and ("units_gap",) in self._adaptive:  # clustered: the units intervals
                level = bonferroni_level(Guarantee.stratum().stop_level(self.level), len(self.strata))
                lo, hi = (x.copy() for x in self._adaptive[("units_gap",)])
            elif used.any() and self.per_stratum():
                lo[used], hi[used] = confidence_sequence_bounds(s[used], n[used], level, self.decision_concentration())
            elif used.any():
                lo[used], hi[used] = binomial_bounds(s[used], n[used], 1.0 - level, "clopper_pearson")
            rate = np.where(used, s / np.maximum(n, 1.0), np.nan)
            if self._units_read():
                rate = np.where(used, self.read_means(), np.nan)
            gap, glo, ghi = gap_interval(rate, np.where(used, lo, np.nan), np.where(used, hi, np.nan))
            tol = float(self.tolerance)
            verdict = "outside" if glo > tol else ("within tolerance" if ghi <= tol else "undecided")
            self._decision["gap"] = {
                "gap": gap,
                "lower": glo,
                "upper": ghi,
                "level": level,
                "tolerance": tol,
                "verdict": verdict,
                "bounds": (lo, hi),
            }
        return self._decision["gap"]

    def gap_decided(self) -> bool:
        """Whether the gap verdict is decided and every stratum's own data support it.

        Returns
        -------
        bool
            The verdict is not ``"undecided"``, every stratum has trials and
            :meth:`stratum_done` holds for every stratum.
        """
        return bool(self.gap()["verdict"] != "undecided" and np.all(self.trials > 0) and self.stratum_done().all())


# -- what the goals read ----------------------------------------------------------------------
if TYPE_CHECKING:

    def _read_by_the_goals(state: RuleState) -> GoalState:
        """Nothing at run time: mypy checks here that a state has every member the goals read."""
        return state
