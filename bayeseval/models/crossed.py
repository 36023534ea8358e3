r"""Intersectional pooling that follows the factors: the crossed-factor logit-normal model.

With several group columns (race x sex x age, say) the cells are not exchangeable: a cell
should borrow from the cells that share its levels, not from the overall rate. The model

.. math::

    s_c \sim \mathrm{Bin}(n_c, \theta_c), \quad
    \operatorname{logit}\theta_c = \alpha + \sum_f \sigma_f z_f[\ell_f(c)] + \gamma_c,
    \quad \gamma_c \sim N(0, \sigma^2),

with ``alpha ~ N(0, 1.5^2)``, zero-sum standard normal ``z_f`` per factor, half-normal(1)
priors on ``sigma_f`` and ``sigma``, is the PyMC engine's ``model="logit_normal"`` with
``factors=`` (:func:`bayeseval.models.pymc.fit_pymc`). :func:`fit_crossed` fits it without
sampling, by an integrated nested Laplace approximation (Rue, Martino and Chopin 2009) in
:mod:`bayeseval._kernels.crossed`: a grid over the log standard deviations, a Laplace
approximation of the latent field at each grid point, and per-cell marginals corrected for
each cell's own binomial likelihood.

Draws are joint: each picks a grid point by its weight and draws the latent field from its
Gaussian approximation, then each cell's logit is mapped onto the corrected marginal (a
Gaussian copula), so draws and summaries agree.

Accuracy and speed
------------------
Compared with PyMC's NUTS on the same model and priors, and with an importance-sampling
reference of the exact posterior, on COMPAS error rates by race x sex x age
(``benchmarks/bench_crossed.py``): docs/validation.md, section 12e.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from bayeseval._api.results import Result
from bayeseval._api.validation import check_level, check_no_missing, check_positive_int, make_rng
from bayeseval._kernels.crossed import CrossedApproximation, fit_crossed_laplace
from bayeseval.counts.counts import Counts, tabulate
from bayeseval.models.posterior import Posterior

__all__ = ["fit_crossed", "CrossedFit"]


class _Marginals:
    """Adapter giving :class:`Posterior` the approximation's exact summaries (not draws)."""

    def __init__(self, approx: CrossedApproximation) -> None:
        self.approx = approx

    def posterior_moments(self) -> tuple[np.ndarray, np.ndarray]:
        return self.approx.means(), self.approx.variances()

    def quantiles(self, probs: Any) -> np.ndarray:
        return self.approx.quantiles(probs)

    def cdf(self, threshold: float) -> np.ndarray:
        return self.approx.cdf(float(threshold))


class CrossedFit(Result):
    """The crossed-factor model's fit: per-cell posterior summaries and draws.

    Parameters
    ----------
    posterior : Posterior
        Draws of every cell's rate (``engine="laplace"``, ``model="logit_normal"``) with
        summaries computed from the approximation's marginals.
    approximation : CrossedApproximation
        The integrated nested Laplace approximation (grid, weights, cell marginals).
    factors : list of str
        The crossed factors.
    level : float
        Credible level of the intervals in :attr:`table`.

    Attributes
    ----------
    posterior : Posterior
        See above; use it for derived quantities (``gap``, ``prob``, ``ranks``, ``weighted``).
    approximation : CrossedApproximation
        See above.
    factors : list of str
        See above.
    level : float
        See above.

    Examples
    --------
    >>> from bayeseval import Counts
    >>> import pandas as pd
    >>> cells = pd.MultiIndex.from_product([["a", "b"], ["x", "y"]], names=["g", "h"])
    >>> counts = Counts.from_arrays([3, 9, 4, 0], [40, 50, 45, 0], strata=cells)
    >>> fit = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=400)
    >>> bool(fit.table.loc[("b", "y"), "predicted"])
    True
    """

    title = "Crossed-factor pooling"

    def __init__(
        self,
        posterior: Posterior,
        approximation: CrossedApproximation,
        factors: list[str],
        level: float,
    ) -> None:
        self.posterior = posterior
        self.approximation = approximation
        self.factors = list(factors)
        self.level = float(level)

    @property
    def table(self) -> pd.DataFrame:
        """Per cell: counts, raw rate, posterior mean, median, interval and flags.

        Returns
        -------
        pandas.DataFrame
            Indexed by cell: ``successes``, ``trials``, ``raw_rate``, ``mean``, ``median``,
            ``lower``, ``upper`` (equal-tailed at :attr:`level`), ``shrinkage`` and
            ``predicted`` (True for a cell without trials: its estimate is a prediction from
            the factor levels, not a measurement).
        """
        return self.summary(self.level)

    def summary(self, level: float | None = None) -> pd.DataFrame:
        """Per-cell summary at a credible level.

        Parameters
        ----------
        level : float, optional
            Credible level; :attr:`level` when None.

        Returns
        -------
        pandas.DataFrame
            The columns of :attr:`table`.

        Examples
        --------
        >>> import pandas as pd
        >>> from bayeseval import Counts
        >>> cells = pd.MultiIndex.from_product([["a", "b"], ["x", "y"]], names=["g", "h"])
        >>> counts = Counts.from_arrays([3, 9, 4, 6], [40, 50, 45, 30], strata=cells)
        >>> fit = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=400)
        >>> s = fit.summary(0.5)
        >>> bool((s["lower"] < s["mean"]).all() and (s["mean"] < s["upper"]).all())
        True
        """
        frame = self.posterior.summary(level=self.level if level is None else check_level(level))
        frame["predicted"] = frame["trials"].to_numpy() == 0
        return frame

    def sd_summary(self) -> pd.DataFrame:
        """Posterior mean and 95% interval of each standard deviation (from the grid).

        Returns
        -------
        pandas.DataFrame
            Indexed by ``sigma_<factor>`` and ``sigma`` (the interaction): ``mean``,
            ``lower``, ``upper``.

        Examples
        --------
        >>> import pandas as pd
        >>> from bayeseval import Counts
        >>> cells = pd.MultiIndex.from_product([["a", "b"], ["x", "y"]], names=["g", "h"])
        >>> counts = Counts.from_arrays([3, 9, 4, 6], [40, 50, 45, 30], strata=cells)
        >>> fit = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=400)
        >>> fit.sd_summary().index.tolist()
        ['sigma_g', 'sigma_h', 'sigma']
        """
        hyper = self.posterior.hyper
        rows = {name: (v.mean(), np.quantile(v, 0.025), np.quantile(v, 0.975)) for name, v in hyper.items()}
        return pd.DataFrame.from_dict(rows, orient="index", columns=["mean", "lower", "upper"])


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_factors(factors: Any) -> list[str]:
    names = [factors] if isinstance(factors, str) else factors
    if not isinstance(names, Sequence) or isinstance(names, (bytes, bytearray)) or not names:
        raise TypeError(f"factors must be a column name or a non-empty list of them, got {factors!r}")
    names = list(names)
    if len(set(names)) != len(names):
        raise ValueError(f"factors must be distinct, got {names!r}")
    return names


def _counts_from_frame(
    frame: pd.DataFrame, factors: list[str], y_true: Any, y_pred: Any, metric: Any, pos_label: Any
) -> Counts:
    missing = [f for f in factors if f not in frame.columns]
    if missing:
        raise ValueError(f"factors {missing!r} are not columns of the frame; columns are {list(frame.columns)[:20]}")
    if y_true is not None or y_pred is not None:
        if y_true is None or y_pred is None:
            raise ValueError(f"give both y_true and y_pred, got y_true={y_true!r}, y_pred={y_pred!r}")
        return tabulate(frame, y_true=y_true, y_pred=y_pred, strata=factors, metric=metric, pos_label=pos_label)
    if not {"successes", "trials"} <= set(frame.columns):
        raise ValueError(
            "a frame needs y_true and y_pred (one row per example) or columns "
            f"'successes' and 'trials'; columns are {list(frame.columns)[:20]}"
        )
    for col in (*factors, "successes", "trials"):
        check_no_missing(frame[col], f"column {col!r}")
    agg = frame.groupby(factors, observed=True, sort=True)[["successes", "trials"]].sum()
    if not isinstance(agg.index, pd.MultiIndex):
        agg.index = pd.MultiIndex.from_arrays([agg.index], names=factors)
    return Counts.from_arrays(agg["successes"], agg["trials"])


def _cell_index(counts: Counts, factors: list[str], complete: bool) -> pd.MultiIndex:
    index = counts.strata
    if not isinstance(index, pd.MultiIndex):
        index = pd.MultiIndex.from_arrays([index], names=[index.name])
    unknown = [f for f in factors if f not in index.names]
    if unknown:
        raise ValueError(f"factors {unknown!r} are not levels of the strata; levels are {list(index.names)}")
    if complete and set(index.names) == set(factors):
        uniques = [pd.Index(index.get_level_values(f).unique()).sort_values() for f in index.names]
        return pd.MultiIndex.from_product(uniques, names=index.names)
    return index


def _complete_counts(counts: Counts, factors: list[str], complete: bool) -> Counts:
    cells = _cell_index(counts, factors, complete)
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    if not isinstance(counts.strata, pd.MultiIndex):
        return Counts.from_arrays(s, n, strata=cells, metric=counts.metric)
    pos = pd.Series(np.arange(len(counts)), index=counts.strata).reindex(cells)
    have = pos.notna().to_numpy()
    take = pos.to_numpy()[have].astype(np.int64)
    s_all, n_all = np.zeros(len(cells), np.int64), np.zeros(len(cells), np.int64)
    s_all[have], n_all[have] = s[take], n[take]
    return Counts.from_arrays(s_all, n_all, strata=cells, metric=counts.metric)


def fit_crossed(
    counts_or_frame: Counts | pd.DataFrame,
    *,
    factors: str | Sequence[Hashable],
    level: float = 0.95,
    random_seed: Any = None,
    draws: int = 4000,
    interaction: bool = True,
    complete: bool = True,
    y_true: str | None = None,
    y_pred: str | None = None,
    metric: Any = "error_rate",
    pos_label: Any = None,
) -> CrossedFit:
    r"""Pool per-cell rates along crossed factors, without sampling.

    A cell borrows from the cells that share its levels, not from the overall rate: the
    PyMC engine's ``model="logit_normal"`` with ``factors=``, fitted by an integrated nested
    Laplace approximation (see :mod:`bayeseval.models.crossed`).

    Parameters
    ----------
    counts_or_frame : Counts or pandas.DataFrame
        Counts whose strata have the factors as index levels; or a frame with one row per
        example (give ``y_true``, ``y_pred`` and ``metric``); or a frame with columns
        ``successes`` and ``trials`` and the factor columns (rows of a cell are added).
    factors : str or list of str
        The crossed factors (names of index levels or columns).
    level : float
        Credible level of the intervals in the result's ``table``.
    random_seed : int or numpy.random.Generator, optional
        Seed of the draws (the summaries do not depend on it).
    draws : int
        Number of joint draws of the cell rates, for gaps, ranks and weighted rates.
    interaction : bool
        Keep the per-cell interaction ``gamma_c``; False fits the additive model.
    complete : bool
        When the strata are exactly the factors, add the missing cells of their full cross
        with zero trials; they get a prediction (flagged ``predicted``).
    y_true, y_pred, metric, pos_label : optional
        For a frame with one row per example: passed to :func:`bayeseval.tabulate`.

    Returns
    -------
    CrossedFit
        ``table`` (per-cell summaries and flags), ``posterior`` (joint draws; a
        :class:`~bayeseval.models.Posterior`) and ``sd_summary()``.

    Notes
    -----
    Measured agreement with PyMC's NUTS: within 0.002 in every cell's posterior mean on
    COMPAS race x sex x age (docs/validation.md, section 12e).

    Examples
    --------
    >>> import pandas as pd
    >>> from bayeseval import Counts
    >>> cells = pd.MultiIndex.from_product([["a", "b", "c"], ["x", "y"]], names=["g", "h"])
    >>> counts = Counts.from_arrays([2, 12, 3, 15, 0, 0], [40, 40, 50, 50, 3, 0], strata=cells)
    >>> fit = fit_crossed(counts, factors=["g", "h"], random_seed=0, draws=1000)
    >>> t = fit.table  # the empty cell (c, y) follows the h effect
    >>> bool(t.loc[("c", "y"), "predicted"] and t.loc[("c", "y"), "mean"] > t.loc[("c", "x"), "mean"])
    True
    """
    names = _check_factors(factors)
    level = check_level(level)
    draws = check_positive_int(draws, "draws")
    interaction = _check_flag(interaction, "interaction")
    complete = _check_flag(complete, "complete")
    rng = make_rng(random_seed)
    counts = _prepare_counts(counts_or_frame, names, complete, y_true, y_pred, metric, pos_label)
    codes = [pd.factorize(counts.strata.get_level_values(f), sort=True)[0] for f in names]
    n_levels = [int(code.max()) + 1 for code in codes]
    # thousands of tiny batched solves: BLAS threads only add overhead
    with threadpool_limits(limits=1, user_api="blas"):
        approx = fit_crossed_laplace(
            counts.successes.to_numpy(),
            counts.trials.to_numpy(),
            codes,
            n_levels,
            [str(f) for f in names],
            interaction=interaction,
        )
        theta, idx = approx.sample(draws, rng)
    return _assemble(approx, theta, idx, counts, [str(f) for f in names], level)


def _assemble(approx, theta, idx, counts, names, level) -> CrossedFit:
    """The Posterior (draws, sd draws, exact marginals) and the CrossedFit around it."""
    sd = np.exp(approx.log_sd[idx])
    hyper = {
        ("sigma" if name == "sigma" else f"sigma_{name}"): sd[:, j] for j, name in enumerate(approx.design.sd_names)
    }
    posterior = Posterior(
        theta=theta,
        counts=counts,
        hyper=hyper,
        engine="laplace",
        model="logit_normal",
        prior="default",
        exact=_Marginals(approx),
        diagnostics={"grid_points": len(approx.weights), "factors": names},
    )
    return CrossedFit(posterior, approx, names, level)


def _prepare_counts(
    data: Any, names: list, complete: bool, y_true: Any, y_pred: Any, metric: Any, pos_label: Any
) -> Counts:
    """Counts per cell from the accepted inputs, completed to the full cross when asked."""
    if isinstance(data, pd.DataFrame):
        counts = _counts_from_frame(data, names, y_true, y_pred, metric, pos_label)
    elif isinstance(data, Counts):
        counts = data
    else:
        raise TypeError(f"counts_or_frame must be a Counts or a pandas DataFrame, got {type(data).__name__}")
    if len(counts) == 0:
        raise ValueError("counts_or_frame has no cells")
    return _complete_counts(counts, names, bool(complete))
