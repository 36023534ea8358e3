"""Comparing two classifiers on the same rows.

Two classifiers scored on the same test rows must be compared *paired*: both
tend to fail on the same hard rows, so the difference between them is far
better determined than either model's own rate. Two independent intervals
that overlap say little.

* :func:`mcnemar` -- exact, mid-p or continuity-corrected chi-square McNemar
  test on the discordant pairs;
* :func:`mcnemar_from_predictions` -- the same from labels and two sets of
  predictions;
* :func:`paired_bootstrap` -- a bootstrap interval for the difference in any
  metric (rows resampled jointly, optionally within strata, optionally a
  population-weighted metric), with the two single-model intervals beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._api.docs import fill_doc
from bayeseval._api.results import Result
from bayeseval._api.validation import (
    align_by_label,
    check_level,
    check_method,
    check_no_missing,
    check_positive_int,
    check_weights,
    make_rng,
    short_repr,
)
from bayeseval._kernels import resampling as rs
from bayeseval.counts.metrics import Metric, get_metric

__all__ = [
    "McNemarResult",
    "mcnemar",
    "mcnemar_from_predictions",
    "PairedBootstrap",
    "paired_bootstrap",
]

_MCNEMAR_METHODS = ("exact", "midp", "asymptotic")


@dataclass(frozen=True, repr=False)
class McNemarResult(Result):
    """Outcome of :func:`mcnemar`.

    Its :attr:`table` is one row (index ``test``, the method) with every field.

    Parameters
    ----------
    statistic : float
        ``min(b, c)`` for the exact and mid-p tests; the continuity-corrected
        chi-square :math:`(|b - c| - 1)^2 / (b + c)` for the asymptotic test.
    pvalue : float
        Two-sided p-value.
    b : int
        Rows model A gets right and model B gets wrong.
    c : int
        Rows model A gets wrong and model B gets right.
    method : str
        ``"exact"``, ``"midp"`` or ``"asymptotic"``.
    n : int
        Number of paired rows.
    difference : float
        Accuracy of A minus accuracy of B, :math:`(b - c) / n`.

    Examples
    --------
    >>> res = mcnemar([1, 1, 1, 0, 1], [0, 0, 1, 0, 1])
    >>> res.b, res.c, round(res.pvalue, 3)
    (2, 0, 0.5)
    >>> res.table.columns.tolist()
    ['statistic', 'pvalue', 'b', 'c', 'n', 'difference']
    """

    title = "McNemar test"

    statistic: float
    pvalue: float
    b: int
    c: int
    method: str
    n: int = 0
    difference: float = float("nan")

    @property
    def table(self) -> pd.DataFrame:
        """One row indexed by the method: statistic, p-value, discordant counts, rows, difference."""
        row = {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "b": self.b,
            "c": self.c,
            "n": self.n,
            "difference": self.difference,
        }
        return pd.DataFrame(row, index=pd.Index([self.method], name="test"))


def _as_bool(values: Any, name: str) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be an array of booleans (or 0/1), got {short_repr(values)}")
    arr = np.asarray(values.to_numpy() if isinstance(values, (pd.Series, pd.Index)) else values)
    check_no_missing(np.ravel(arr), name)
    if arr.ndim != 1:
        arr = np.ravel(arr) if arr.ndim > 1 else np.atleast_1d(arr)
    if arr.size == 0:
        raise ValueError(f"{name} is empty; give one value per row")
    if arr.dtype == bool:
        return arr
    try:
        f = arr.astype(float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be booleans or 0/1, got {short_repr(values)}") from exc
    if not np.all(np.isin(f, (0.0, 1.0))):
        bad = f[~np.isin(f, (0.0, 1.0))][0]
        raise ValueError(f"{name} must hold only booleans or 0/1, got {bad!r}")
    return f.astype(bool)


_MCNEMAR_RETURNED = """\
Returns
-------
McNemarResult
    The statistic, the p-value and the discordant counts ``b`` and ``c``."""


@fill_doc(mcnemar_returned=_MCNEMAR_RETURNED)
def mcnemar(correct_a: Any, correct_b: Any, *, method: str = "exact") -> McNemarResult:
    r"""Test whether two classifiers are equally accurate on the same rows (McNemar's test).

    Only the discordant pairs carry information: :math:`b` rows where A is
    right and B wrong, :math:`c` rows where A is wrong and B right. Under the
    null :math:`b \sim \text{Binomial}(b + c, 1/2)`.

    * ``"exact"``: :math:`p = \min(1, 2\,F(\min(b, c)))`, with :math:`F` the
      Binomial(:math:`b+c`, 1/2) CDF (:func:`scipy.stats.binomtest`);
    * ``"midp"``: the mid-p version
      :math:`p = \min(1, 2F(\min(b,c)) - f(\min(b,c)))`, with :math:`f` the
      pmf -- less conservative, close to nominal size;
    * ``"asymptotic"``: :math:`X^2 = (|b - c| - 1)^2 / (b + c)` against
      :math:`\chi^2_1` (continuity corrected, as statsmodels and R's
      ``mcnemar.test``); use it when :math:`b + c` is large.

    With no discordant pair the p-value is 1.

    Parameters
    ----------
    correct_a, correct_b : array-like of bool or 0/1
        Whether each row is classified correctly by model A and by model B.
    method : {"exact", "midp", "asymptotic"}, default "exact"

    {mcnemar_returned}

    Examples
    --------
    >>> a = [1] * 30 + [0] * 5 + [1] * 50
    >>> b = [0] * 30 + [1] * 5 + [1] * 50
    >>> res = mcnemar(a, b)
    >>> res.b, res.c, res.pvalue < 0.001
    (30, 5, True)
    """
    method = check_method(method, _MCNEMAR_METHODS)
    correct_a, correct_b = align_by_label(("correct_a", correct_a), ("correct_b", correct_b))
    for name, value in (("correct_a", correct_a), ("correct_b", correct_b)):
        if np.ndim(value) == 1:
            check_no_missing(value, name)
    a = _as_bool(correct_a, "correct_a")
    bb = _as_bool(correct_b, "correct_b")
    if a.shape != bb.shape:
        raise ValueError(f"correct_a and correct_b must have the same length, got {a.size} and {bb.size}")
    b = int(np.sum(a & ~bb))
    c = int(np.sum(~a & bb))
    n = int(a.size)
    m = b + c
    diff = (b - c) / n
    if m == 0:
        stat = 0.0
        return McNemarResult(stat, 1.0, b, c, method, n, diff)
    k = min(b, c)
    if method == "exact":
        stat = float(k)
        p = float(stats.binomtest(k, m, 0.5).pvalue)
    elif method == "midp":
        stat = float(k)
        p = float(2.0 * stats.binom.cdf(k, m, 0.5) - stats.binom.pmf(k, m, 0.5))
    else:
        stat = float((abs(b - c) - 1.0) ** 2 / m)
        p = float(stats.chi2.sf(stat, 1))
    return McNemarResult(stat, float(min(1.0, p)), b, c, method, n, diff)


@fill_doc(mcnemar_returned=_MCNEMAR_RETURNED)
def mcnemar_from_predictions(y_true: Any, pred_a: Any, pred_b: Any, *, method: str = "exact") -> McNemarResult:
    """Run McNemar's test from true labels and two models' predictions on the same rows.

    Parameters
    ----------
    y_true, pred_a, pred_b : array-like
        Labels and predictions, one per row.
    method : {"exact", "midp", "asymptotic"}, default "exact"

    {mcnemar_returned}

    Examples
    --------
    >>> mcnemar_from_predictions([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 1, 1]).b
    1
    """
    y, pa, pb, _ = _rows(y_true, pred_a, pred_b)
    return mcnemar(pa == y, pb == y, method=method)


# ---------------------------------------------------------------------------
# Paired bootstrap
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class PairedBootstrap(Result):
    """Outcome of :func:`paired_bootstrap`.

    Its :attr:`table` (model A, model B, difference) is the tidy view;
    ``str(result)`` is the plain-English :attr:`sentence`.

    Parameters
    ----------
    metric : str
        Metric name (or the callable's name).
    estimate_a, estimate_b : float
        Each model's metric on the full test set.
    difference : float
        ``estimate_a - estimate_b``.
    ci : tuple of float
        Paired bootstrap interval of the difference.
    ci_a, ci_b : tuple of float
        Bootstrap intervals of each model's own metric (same replicates).
    level : float
        Confidence level.
    method : str
        ``"percentile"`` or ``"bca"``.
    n_resamples : int
        Replicates used (replicates where the metric is undefined, e.g. no
        trials, are dropped).
    n_rows : int
        Number of paired rows.
    correlation : float
        Correlation of the two models' replicates: the reason the paired
        interval is narrow.
    table : pandas.DataFrame
        Rows ``model_a``, ``model_b``, ``difference``; columns ``estimate``,
        ``lower``, ``upper``, ``width``.
    replicates : pandas.DataFrame
        The bootstrap replicates (columns ``model_a``, ``model_b``,
        ``difference``).

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([1, 0] * 100)
    >>> a = y.copy(); a[:20] = 1 - a[:20]
    >>> b = y.copy(); b[:30] = 1 - b[:30]
    >>> res = paired_bootstrap(y, a, b, metric="accuracy", random_seed=0)
    >>> round(res.difference, 3), res.table.index.tolist()
    (0.05, ['model_a', 'model_b', 'difference'])
    """

    title = "Paired bootstrap"

    metric: str
    estimate_a: float
    estimate_b: float
    difference: float
    ci: tuple[float, float]
    ci_a: tuple[float, float]
    ci_b: tuple[float, float]
    level: float
    method: str
    n_resamples: int
    n_rows: int
    correlation: float
    table: pd.DataFrame = field(repr=False)
    replicates: pd.DataFrame = field(repr=False)

    @property
    def width(self) -> float:
        """Width of the paired interval of the difference."""
        return self.ci[1] - self.ci[0]

    @property
    def independent_width(self) -> float:
        r"""Width a difference interval would have if the models were independent,
        :math:`\sqrt{w_a^2 + w_b^2}`."""
        wa = self.ci_a[1] - self.ci_a[0]
        wb = self.ci_b[1] - self.ci_b[0]
        return float(np.hypot(wa, wb))

    @property
    def sentence(self) -> str:
        """Plain-English account of the comparison and of how much pairing narrows it."""
        wa = self.ci_a[1] - self.ci_a[0]
        wb = self.ci_b[1] - self.ci_b[0]
        w = self.width
        pct = f"{self.level:.0%}"

        def times(other: float) -> str:
            if w <= 0 or other <= 0:  # a model right (or wrong) on every resampled row
                return (
                    "as wide as" if w <= 0 and other <= 0 else ("infinitely narrower than" if w <= 0 else "wider than")
                )
            r = other / w
            return f"{r:.1f} times narrower than" if r >= 1 else f"{1 / r:.1f} times wider than"

        rho = self.correlation
        if not np.isfinite(rho):
            why = (
                "The replicates of at least one model do not vary (the same score on every "
                "resample), so their correlation is undefined."
            )
        elif rho >= 0.3:
            why = (
                f"The two models' replicates correlate at {rho:.2f}: they succeed and fail "
                "on many of the same rows, which pairing cancels."
            )
        else:
            why = f"The two models' replicates correlate at only {rho:.2f}, so pairing gains little here."
        verdict = (
            "excludes 0: the models differ" if self.ci[0] > 0 or self.ci[1] < 0 else "includes 0: no clear difference"
        )
        return (
            f"The paired {pct} interval for the difference in {self.metric} (A - B = "
            f"{self.difference:.4g}) is [{self.ci[0]:.4g}, {self.ci[1]:.4g}], {w:.3g} wide, and "
            f"{verdict}. It is {times(wa)} model A's own interval ({wa:.3g} wide) and "
            f"{times(wb)} model B's ({wb:.3g}); treating the models as independent would give a "
            f"difference interval about {self.independent_width:.3g} wide. {why}"
        )

    def __str__(self) -> str:
        return self.sentence


def _rows(y_true: Any, pred_a: Any, pred_b: Any, strata: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """Labels, predictions (and strata), pandas inputs paired by index label, no missing values."""
    named = (("y_true", y_true), ("pred_a", pred_a), ("pred_b", pred_b))
    for name, v in named:
        if isinstance(v, (str, bytes)) or v is None:
            raise TypeError(f"{name} must be an array of labels, got {short_repr(v)}")
    *values, strata = align_by_label(*named, ("strata", strata))
    out = []
    for (name, _), v in zip(named, values, strict=True):
        arr = np.asarray(v.to_numpy() if isinstance(v, (pd.Series, pd.Index)) else v)
        if arr.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
        if arr.size == 0:
            raise ValueError(f"{name} is empty; give one label per row")
        check_no_missing(arr, name, hint="drop unlabelled rows first")
        out.append(arr)
    if not (out[0].size == out[1].size == out[2].size):
        raise ValueError(
            f"y_true, pred_a and pred_b must have the same length, got {out[0].size}, {out[1].size} and {out[2].size}"
        )
    rs.check_label_kinds(*((name, arr) for (name, _), arr in zip(named, out, strict=True)))
    return out[0], out[1], out[2], strata


def _strata(strata: Any, n: int, weights: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Stratum codes (sorted labels) and the population shares aligned with them."""
    if strata is None:
        if weights is not None:
            raise ValueError("weights (population shares per stratum) need strata")
        return None, None
    st_arr = np.asarray(strata.to_numpy() if isinstance(strata, pd.Series) else strata)
    if st_arr.shape != (n,):
        raise ValueError(f"strata must have one label per row ({n}), got shape {st_arr.shape}")
    check_no_missing(st_arr, "strata", hint="every row needs a stratum")
    codes, uniques = pd.factorize(st_arr, sort=True)
    if weights is None:
        return codes.astype(np.int64), None
    if isinstance(weights, Mapping):
        weights = pd.Series(dict(weights), dtype=float)
    return codes.astype(np.int64), check_weights(weights, pd.Index(uniques))


def _with_difference(values: np.ndarray) -> np.ndarray:
    """(..., 2) metric of A and B -> (..., 3) with A - B appended."""
    return np.concatenate([values, values[..., :1] - values[..., 1:]], axis=-1)


@fill_doc()
def paired_bootstrap(
    y_true: Any,
    pred_a: Any,
    pred_b: Any,
    *,
    metric: str | Metric | Callable[[np.ndarray, np.ndarray], float] = "accuracy",
    strata: Any = None,
    weights: Any = None,
    pos_label: Any = None,
    level: float = 0.95,
    method: str = "bca",
    n_resamples: int = 9999,
    random_seed: int | np.random.Generator | None = None,
) -> PairedBootstrap:
    r"""Paired bootstrap interval for the difference in a metric between two models.

    Each replicate resamples rows *jointly* (the same rows for both models),
    with replacement, within each stratum when ``strata`` is given (so no
    stratum ever vanishes), and computes

    .. math::

        \Delta^* = M(y^*, \hat y_A^*) - M(y^*, \hat y_B^*).

    The interval of :math:`\Delta` comes from the replicates (percentile or
    BCa). Because both models tend to fail on the same rows,
    :math:`\operatorname{Var}(\Delta) = \operatorname{Var}(M_A) +
    \operatorname{Var}(M_B) - 2\operatorname{Cov}(M_A, M_B)` is usually far
    smaller than either model's own variance; the result gives both
    single-model intervals beside the paired one, and
    :attr:`PairedBootstrap.sentence` says by how much it is narrower.

    With ``weights`` (population shares per stratum) the metric is the
    population-weighted :math:`\sum_k \pi_k M_k` over strata, e.g. the
    weighted risk.

    For named metrics (``"accuracy"``, ``"recall"``, ``"error_rate"`` ...) a
    replicate depends on the rows only through the counts of at most 16 row
    patterns per stratum (trial/success for A and B), so replicates are drawn
    as multinomial counts of those patterns: exactly the row bootstrap, at a
    cost independent of the number of rows. A callable metric
    ``f(y_true, y_pred) -> float`` is evaluated on resampled rows
    (``2 * n_resamples`` calls, per stratum when ``weights`` are given; BCa
    adds a jackknife of ``2 * n`` calls, at most about 4000 on many rows), so
    keep it fast.

    Parameters
    ----------
    y_true, pred_a, pred_b : array-like
        Labels and the two models' predictions, one per row. pandas inputs
        (and ``strata``) are paired by index label. A missing label or
        prediction (NaN, None, ``pd.NA``) is a ValueError naming the argument
        and the count: drop unlabelled rows first.
    metric : str, Metric or callable, default "accuracy"
        Metric name as in :func:`bayeseval.get_metric`, or a function of
        ``(y_true, y_pred)``.
    strata : array-like, optional
        Stratum label per row; resampling is done within strata.
    weights : dict, Series or sequence, optional
        Population shares of the strata (sum to 1); requires ``strata``. A
        sequence is aligned with the sorted stratum labels.
    pos_label : optional
        Positive class for recall, precision and the like; it must be one of
        the labels. None (the default) means 1 for 0/1 or boolean labels and
        is an error for other labels of a metric that needs a positive class.
    level : float, default 0.95
        Confidence level in (0, 1).
    method : {"bca", "percentile"}, default "bca"
        Bias-corrected and accelerated or plain percentile interval.
    n_resamples : int, default 9999
        Number of bootstrap replicates (replicates where the metric is
        undefined, e.g. no trials, are dropped with a warning).
    {random_seed}

    Returns
    -------
    PairedBootstrap
        The three intervals (model A, model B, difference) from the same replicates.

    Raises
    ------
    ValueError
        For missing values, mismatched lengths or indexes, a bad argument, or
        a metric that is undefined on the data.

    {bootstrap_policy}
    Both read ``pos_label=None`` as 1 for 0/1 or boolean labels. BCa is second-order
    accurate and follows skewed metrics better than the percentile interval; the pattern
    bootstrap makes 9999 replicates cheap. Earlier releases defaulted here to
    ``method="percentile"`` and ``n_resamples=2000``: pass them to reproduce
    those intervals. The BCa bias correction is SciPy's (share of replicates
    below the estimate, ties counted half); the acceleration comes from the
    delete-one jackknife with the strata as independent samples (Efron &
    Tibshirani 1993, eq. 15.36). An estimate outside every replicate leaves
    BCa undefined: the percentile interval is given with a warning.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 500)
    >>> hard = rng.random(500) < 0.3
    >>> a = np.where(hard, 1 - y, y)
    >>> b = np.where(hard | (rng.random(500) < 0.05), 1 - y, y)
    >>> res = paired_bootstrap(y, a, b, metric="accuracy", random_seed=1)
    >>> res.width < (res.ci_a[1] - res.ci_a[0]) / 2
    True
    """
    y, pa, pb, strata = _rows(y_true, pred_a, pred_b, strata)
    level = check_level(level)
    method = check_method(method, ("percentile", "bca"))
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=10)
    rng = make_rng(random_seed)
    n = y.size
    rs.check_enough_rows(n, "y_true")
    codes, pi = _strata(strata, n, weights)
    layout = rs.stratum_layout(codes, n)

    name, est, reps, jack = _replicates(metric, pos_label, (y, pa, pb), layout, pi, n_resamples, rng)
    reps = rs.drop_undefined(reps, name)
    lower, upper = rs.confidence_interval(
        reps, est, level=level, method=method, jackknife=jack, what=name, names=["model A", "model B", "the difference"]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = float(np.corrcoef(reps[:, 0], reps[:, 1])[0, 1])
    index = pd.Index(["model_a", "model_b", "difference"], name="quantity")
    table = pd.DataFrame({"estimate": est, "lower": lower, "upper": upper}, index=index)
    table["width"] = table["upper"] - table["lower"]
    cis = [(float(lo), float(hi)) for lo, hi in zip(lower, upper, strict=True)]
    return PairedBootstrap(
        metric=name,
        estimate_a=float(est[0]),
        estimate_b=float(est[1]),
        difference=float(est[2]),
        ci=cis[2],
        ci_a=cis[0],
        ci_b=cis[1],
        level=level,
        method=method,
        n_resamples=int(reps.shape[0]),
        n_rows=int(n),
        correlation=corr,
        table=table,
        replicates=pd.DataFrame(reps, columns=list(index)),
    )


def _replicates(
    metric: Any,
    pos_label: Any,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    layout: rs.StratumLayout,
    pi: np.ndarray | None,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[str, np.ndarray, np.ndarray, Callable[[], rs.Jackknife]]:
    """Metric name, (A, B, A - B) on the data, its bootstrap replicates and its jackknife."""
    y, pa, pb = rows
    if callable(metric) and not isinstance(metric, Metric):
        name = getattr(metric, "__name__", "metric")
        stat = _callable_statistic(metric, y, pa, pb, layout.codes, pi)
        est = np.asarray(stat(np.arange(layout.n_rows)[None, :]))[0]
        _check_defined(est, name)
        return (
            name,
            est,
            rs.bootstrap_replicates(stat, layout, n_resamples, rng),
            (lambda: rs.jackknife_values(stat, layout.codes)),
        )
    m = get_metric(metric)
    pos = rs.resolve_pos_label(pos_label, rows, what=f"metric {m.name!r}") if m.needs_positive else pos_label
    counts = _pattern_counts(m, pos, y, pa, pb, layout)

    def count_stat(c: np.ndarray) -> np.ndarray:
        return _with_difference(_pattern_stat(c, pi))

    est = count_stat(counts)
    _check_defined(est, m.name)
    return (
        m.name,
        est,
        rs.resample_counts(count_stat, counts, n_resamples, rng),
        (lambda: rs.jackknife_counts(count_stat, counts)),
    )


def _check_defined(est: np.ndarray, name: str) -> None:
    if not np.all(np.isfinite(est)):
        raise ValueError(
            f"{name} is undefined on the data (no trials for one model or one stratum): "
            f"model A {float(est[0])!r}, model B {float(est[1])!r}"
        )


# indicator of (trial_a, success_a, trial_b, success_b) for each of the 16 patterns
_PATTERN_BITS = np.array([[(p >> j) & 1 for j in range(4)] for p in range(16)], dtype=float)


def _pattern_stat(counts: np.ndarray, pi: np.ndarray | None) -> np.ndarray:
    """Metric of both models from pattern counts (..., S, 16) -> (..., 2)."""
    tot = counts @ _PATTERN_BITS  # (..., S, 4)
    with np.errstate(invalid="ignore", divide="ignore"):
        if pi is None:
            agg = tot.sum(axis=-2)  # (..., 4)
            return np.stack([agg[..., 1] / agg[..., 0], agg[..., 3] / agg[..., 2]], axis=-1)
        rate_a = tot[..., 1] / tot[..., 0]
        rate_b = tot[..., 3] / tot[..., 2]
        # strata of weight 0 never count, even when undefined
        wa = np.where(pi > 0, pi * rate_a, 0.0)
        wb = np.where(pi > 0, pi * rate_b, 0.0)
        return np.stack([wa.sum(axis=-1), wb.sum(axis=-1)], axis=-1)


def _pattern_counts(
    m: Metric, pos: Any, y: np.ndarray, pa: np.ndarray, pb: np.ndarray, layout: rs.StratumLayout
) -> np.ndarray:
    """Rows per stratum and pattern (trial/success of A and B): (S, 16) counts."""
    ta, sa = m.masks(y, pa, pos)
    tb, sb = m.masks(y, pb, pos)
    pattern = ta.astype(np.int64) + 2 * sa + 4 * tb + 8 * sb
    counts = np.zeros((layout.n_strata, 16))
    np.add.at(counts, (layout.codes, pattern), 1.0)
    return counts


def _callable_statistic(
    f: Callable[[np.ndarray, np.ndarray], float],
    y: np.ndarray,
    pa: np.ndarray,
    pb: np.ndarray,
    codes: np.ndarray,
    pi: np.ndarray | None,
) -> Callable[[np.ndarray], np.ndarray]:
    """(A, B, A - B) of ``f`` on each row set of an index matrix (per stratum when weighted)."""

    def one(idx: np.ndarray) -> tuple[float, float]:
        if pi is None:
            return float(f(y[idx], pa[idx])), float(f(y[idx], pb[idx]))
        a = b = 0.0
        c = codes[idx]
        for k in np.flatnonzero(pi > 0):
            sel = idx[c == k]
            a += pi[k] * float(f(y[sel], pa[sel]))
            b += pi[k] * float(f(y[sel], pb[sel]))
        return a, b

    def statistic(index: np.ndarray) -> np.ndarray:
        return _with_difference(np.array([one(idx) for idx in index], dtype=float).reshape(-1, 2))

    return statistic
