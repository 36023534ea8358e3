r"""Classic error-rate estimators for a classifier fit on the data at hand.

A classifier's error counted on its own design data (resubstitution) is
optimistic; a holdout estimate measures a classifier trained on less data and
is pessimistic for the one trained on everything; resampling estimators
(leave-one-out, k-fold, bootstrap .632 and .632+) sit between. Risk averaging
uses the classifier's own posterior probabilities, needs no labels and has a
lower variance than counting errors, but is only as good as the probabilities'
calibration, so it is reported beside a counted estimate.

The error-reject trade-off (Chow 1970) links the reject rate of the rule
"reject when max_k P(k | x) < 1 - t" to the error rate of the accepted rows;
the error can be read off the reject-rate curve alone, without labels
(Fukunaga & Kessell 1972).

Notes
-----
The .632 and .632+ estimators of :func:`estimate_error` (Efron & Tibshirani 1997). With
:math:`\overline{err}` the resubstitution error and
:math:`\widehat{Err}^{(1)} = n^{-1}\sum_i \hat E_i` the leave-one-out bootstrap error
(:math:`\hat E_i` the error on row *i* averaged over the bootstrap fits whose sample did not
contain it), :math:`\widehat{Err}^{(.632)} = .368\,\overline{err} + .632\,\widehat{Err}^{(1)}`.
The .632+ estimator uses the no-information rate
:math:`\hat\gamma = \sum_k \hat p_k (1 - \hat q_k)` (observed class shares times one minus
predicted class shares), the relative overfitting rate
:math:`\hat R = (\widehat{Err}^{(1)\prime} - \overline{err}) / (\hat\gamma - \overline{err})`
(0 unless both differences are positive,
:math:`\widehat{Err}^{(1)\prime} = \min(\widehat{Err}^{(1)}, \hat\gamma)`) and the weight
:math:`\hat w = .632 / (1 - .368 \hat R)`:
:math:`\widehat{Err}^{(.632+)} = (1 - \hat w)\,\overline{err} + \hat w\,\widehat{Err}^{(1)\prime}`.

References
----------
Efron, B. & Tibshirani, R. (1997). Improvements on cross-validation: the .632+
bootstrap method. Journal of the American Statistical Association 92, 548-560.

Chow, C. K. (1970). On optimum recognition error and reject tradeoff. IEEE
Transactions on Information Theory 16, 41-46.

Fukunaga, K. & Kessell, D. L. (1972). Application of optimum error-reject
functions. IEEE Transactions on Information Theory 18, 814-817.

Fukunaga, K. (1990). Introduction to Statistical Pattern Recognition, 2nd ed.,
chapter 5 (error estimation, risk averaging).
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import (
    align_by_label,
    as_row_array,
    check_class_labels,
    check_level,
    check_method,
    check_no_missing,
    check_positive_int,
    check_probability,
    make_rng,
    missing_mask,
)
from bayeseval._api.warnings import CalibrationWarning
from bayeseval._kernels.binomial import binomial_bounds

__all__ = [
    "METHODS",
    "estimate_error",
    "risk_averaging",
    "error_reject_curve",
    "plot_error_reject",
]

METHODS: tuple[str, ...] = (
    "resubstitution",
    "holdout",
    "loo",
    "kfold",
    "bootstrap632",
    "bootstrap632plus",
    "risk_averaging",
)

_COLUMNS = ["method", "estimate", "se", "lower", "upper", "notes"]


# --------------------------------------------------------------------------- helpers


def _wilson(errors: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval of ``errors`` out of ``n`` (the shared binomial kernel)."""
    lo, hi = binomial_bounds(float(errors), float(n), 1.0 - level, "wilson")
    return float(lo), float(hi)


def _take(data: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of an array, a DataFrame or a Series (positional)."""
    if hasattr(data, "iloc"):
        return data.iloc[idx]
    return data[idx]


def _risk(proba: Any, name: str = "proba") -> np.ndarray:
    """Conditional risk 1 - max_k P(k | x) of each row from a probability matrix."""
    if isinstance(proba, (pd.Series, pd.DataFrame)):
        proba = proba.to_numpy()
    p = np.asarray(proba)
    if p.dtype.kind not in "biuf":
        check_no_missing(p, name)
    p = p.astype(float)
    if p.ndim in (1, 2) and p.shape[0] > 0:
        check_no_missing(p, name, hint="every row needs its class probabilities")
    if p.ndim == 1:
        p = np.column_stack([1.0 - p, p])
    if p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(
            f"{name} must be a (n_rows, n_classes) array of class probabilities "
            f"(or a 1-D array of P(class 1) for two classes), got shape {p.shape}"
        )
    if not np.all(np.isfinite(p)) or np.any(p < -1e-9) or np.any(p > 1 + 1e-9):
        raise ValueError(f"{name} must hold probabilities in [0, 1]")
    if p.shape[1] > 1 and np.any(np.abs(p.sum(axis=1) - 1.0) > 1e-6):
        bad = int(np.flatnonzero(np.abs(p.sum(axis=1) - 1.0) > 1e-6)[0])
        raise ValueError(f"{name} rows must sum to 1; row {bad} sums to {float(p[bad].sum()):.6g}")
    return np.clip(1.0 - p.max(axis=1), 0.0, 1.0)


def _normal_interval(est: float, se: float, level: float) -> tuple[float, float]:
    z = stats.norm.ppf(0.5 + level / 2)
    return max(0.0, est - z * se), min(1.0, est + z * se)


def _counted_row(method: str, errors: np.ndarray, level: float, note: str) -> dict[str, Any]:
    n = errors.size
    k = int(errors.sum())
    p = k / n
    lo, hi = _wilson(k, n, level)
    return {
        "method": method,
        "estimate": p,
        "se": float(np.sqrt(p * (1 - p) / n)),
        "lower": lo,
        "upper": hi,
        "notes": note,
    }


def _bootstrap_errors(
    estimator: Any,
    X: Any,
    y: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Out-of-bag loss sums and counts per observation over bootstrap fits.

    Returns (loss sums, out-of-bag counts, one-class resamples redrawn, failed fits).
    """
    from sklearn.base import clone

    n = y.size
    n_classes = np.unique(y).size
    loss_sum = np.zeros(n)
    oob_count = np.zeros(n, dtype=np.int64)
    redraws = 0
    failures = 0
    last_error: Exception | None = None
    for _ in range(n_resamples):
        for _attempt in range(100):
            idx = rng.integers(0, n, size=n)
            if np.unique(y[idx]).size == n_classes:
                break
            redraws += 1
        in_bag = np.zeros(n, dtype=bool)
        in_bag[idx] = True
        oob = np.flatnonzero(~in_bag)
        if oob.size == 0:
            continue
        try:
            model = clone(estimator).fit(_take(X, idx), y[idx])
        except (ValueError, np.linalg.LinAlgError) as exc:
            # e.g. a singular covariance matrix from duplicated rows (QDA)
            failures += 1
            last_error = exc
            continue
        wrong = np.asarray(model.predict(_take(X, oob))) != y[oob]
        loss_sum[oob] += wrong
        oob_count[oob] += 1
    if failures > n_resamples // 2:
        raise ValueError(f"{failures} of {n_resamples} bootstrap fits failed; last error: {last_error}") from last_error
    return loss_sum, oob_count, redraws, failures


def _check_design(estimator: Any, X: Any, y: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
    """Validate the classifier and the design data; pair a DataFrame ``X`` and Series ``y`` by label."""
    if not hasattr(estimator, "fit") or not hasattr(estimator, "predict"):
        raise TypeError(f"estimator must be a scikit-learn classifier with fit and predict, got {estimator!r}")
    if not hasattr(X, "iloc") and not hasattr(X, "shape"):
        X = np.asarray(X)
    X, y = align_by_label(("X", X), ("y", y))
    y = as_row_array(y)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of class labels, got shape {y.shape}")
    check_no_missing(y, "y", hint="every row needs a label; drop those rows first")
    check_class_labels(y, "y")
    if hasattr(X, "shape") and X.shape[0] != y.size:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.size} labels")
    classes, class_counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError(f"y must contain at least two classes, got {classes.tolist()}")
    return X, y, classes, class_counts


def _632(err_resub: float, err1: float, gamma: float) -> tuple[float, float, float, float]:
    """.632 and .632+ estimates (Efron & Tibshirani 1997, eqs. 24, 27-29, 32).

    Returns (err632, err632plus, R, w).
    """
    err632 = 0.368 * err_resub + 0.632 * err1
    err1_p = min(err1, gamma)
    if err1 > err_resub and gamma > err_resub:
        r = (err1_p - err_resub) / (gamma - err_resub)
    else:
        r = 0.0
    r = float(np.clip(r, 0.0, 1.0))
    w = 0.632 / (1 - 0.368 * r)
    err632plus = (1 - w) * err_resub + w * err1_p
    return err632, err632plus, r, w


# --------------------------------------------------------------------------- public API


def estimate_error(
    estimator: Any,
    X: Any,
    y: Any,
    *,
    methods: Sequence[str] = METHODS,
    test_size: float = 0.3,
    n_splits: int = 10,
    n_resamples: int = 200,
    unlabelled: Any = None,
    level: float = 0.95,
    random_seed: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    r"""Estimate the error rate of a scikit-learn classifier trained on ``X, y``.

    Each method estimates the error rate of the classifier trained on all of
    ``X, y`` (the conditional error of the fitted rule) in its own way:

    * ``resubstitution``: errors counted on the design data itself; optimistic
      (biased low). No interval: a binomial interval around a biased count
      would look more certain than it is.
    * ``holdout``: a stratified split (``test_size``), train on the rest, count
      errors on the held-out rows; Wilson interval. Measures a classifier
      trained on fewer rows, so it is pessimistic on average.
    * ``loo`` and ``kfold``: leave-one-out and stratified ``n_splits``-fold
      cross-validated predictions (:func:`sklearn.model_selection.cross_val_predict`).
      The standard error and Wilson interval treat the ``n`` held-out
      predictions as independent, which they are not quite.
    * ``bootstrap632`` and ``bootstrap632plus``: Efron & Tibshirani (1997), a
      weighted mean of the resubstitution error and the leave-one-out
      bootstrap error (formulas in the :mod:`bayeseval.estimate.classic` module notes).
      No standard error is reported (the bootstrap is not a binomial count).
    * ``risk_averaging``: the mean of the conditional risk
      :math:`1 - \max_k \hat P(k \mid x)` from ``predict_proba``, over
      ``unlabelled`` when given (classifier fit on all of ``X, y``), else over
      out-of-fold probabilities for ``X`` (same folds as ``kfold``). Standard
      error sd / sqrt(n) and a normal interval. It is compared with a counted
      estimate on the same rows (out-of-fold errors); when they disagree beyond
      their uncertainty a :class:`~bayeseval.CalibrationWarning` is raised.

    Parameters
    ----------
    estimator : scikit-learn classifier
        Unfitted (or fitted; it is cloned before every fit). ``risk_averaging``
        needs ``predict_proba``.
    X : array-like or DataFrame, shape (n, p)
        Design data.
    y : array-like, shape (n,)
        Class labels (none missing). When ``X`` is a DataFrame and ``y`` a
        Series, they are paired by index label (in the order of ``X``).
    methods : sequence of str
        Any of ``resubstitution, holdout, loo, kfold, bootstrap632,
        bootstrap632plus, risk_averaging``.
    test_size : float
        Share of rows held out by ``holdout``.
    n_splits : int
        Folds of ``kfold`` and of the out-of-fold probabilities of
        ``risk_averaging``; lowered to the smallest class size when needed.
    n_resamples : int
        Bootstrap fits for ``bootstrap632`` and ``bootstrap632plus``.
    unlabelled : array-like or DataFrame, optional
        Rows without labels for ``risk_averaging``.
    level : float
        Interval level (0.95 means 95%).
    random_seed : int or numpy Generator, optional
        Seed of every random split.

    Returns
    -------
    pandas.DataFrame
        One row per method with columns ``method, estimate, se, lower, upper,
        notes`` (``se``, ``lower``, ``upper`` are NaN where not defined).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> table = estimate_error(LinearDiscriminantAnalysis(), X, y,
    ...                        methods=("resubstitution", "kfold"), random_seed=1)
    >>> list(table["method"])
    ['resubstitution', 'kfold']
    >>> bool(table["estimate"].iloc[0] <= table["estimate"].iloc[1])
    True
    """
    from sklearn.base import clone

    methods = _check_methods(methods)
    level = check_level(level)
    test_size = check_probability(test_size, "test_size", open_interval=True)
    n_splits = check_positive_int(n_splits, "n_splits", minimum=2)
    n_resamples = check_positive_int(n_resamples, "n_resamples", minimum=1)
    X, y, classes, class_counts = _check_design(estimator, X, y)
    seeds = make_rng(random_seed).integers(0, 2**31 - 1, size=3)
    design = _Design(
        estimator=estimator,
        X=X,
        y=y,
        classes=classes,
        class_counts=class_counts,
        level=level,
        cv_seed=int(seeds[0]),
        holdout_seed=int(seeds[1]),
        boot_seed=int(seeds[2]),
        n_splits=n_splits,
        test_size=test_size,
        n_resamples=n_resamples,
    )
    needs_full = {"resubstitution", "bootstrap632", "bootstrap632plus"} & set(methods) or (
        "risk_averaging" in methods and unlabelled is not None
    )
    if needs_full:
        design.full = clone(estimator).fit(X, y)
        design.resub_pred = np.asarray(design.full.predict(X))
        design.err_resub = float(np.mean(design.resub_pred != y))
    rows: dict[str, dict[str, Any]] = {}
    for method in methods:
        if method not in rows:
            rows.update(_method_rows(design, method, unlabelled))
    return pd.DataFrame([rows[m] for m in dict.fromkeys(methods)], columns=_COLUMNS)


def _check_methods(methods: Any) -> list[str]:
    if isinstance(methods, str):
        methods = (methods,)
    methods = [check_method(m, METHODS, "methods") for m in methods]
    if not methods:
        raise ValueError("methods is empty; give at least one of " + ", ".join(METHODS))
    return methods


@dataclass
class _Design:
    """The classifier, its design data and the settings shared by the estimators."""

    estimator: Any
    X: Any
    y: np.ndarray
    classes: np.ndarray
    class_counts: np.ndarray
    level: float
    cv_seed: int
    holdout_seed: int
    boot_seed: int
    n_splits: int
    test_size: float
    n_resamples: int
    full: Any = None
    resub_pred: np.ndarray | None = None
    err_resub: float = float("nan")

    @property
    def folds(self) -> int:
        """Folds of the cross-validation: ``n_splits`` capped by the smallest class (0: none)."""
        folds = min(self.n_splits, int(self.class_counts.min()))
        return folds if folds >= 2 else 0

    @property
    def cv(self) -> Any:
        from sklearn.model_selection import StratifiedKFold

        if not self.folds:
            return None
        return StratifiedKFold(n_splits=self.folds, shuffle=True, random_state=self.cv_seed)


def _uncounted_row(method: str, estimate: float, notes: str) -> dict[str, Any]:
    return {"method": method, "estimate": estimate, "se": np.nan, "lower": np.nan, "upper": np.nan, "notes": notes}


def _method_rows(design: _Design, method: str, unlabelled: Any) -> dict[str, dict[str, Any]]:
    """The table rows of one method (the two bootstrap methods come together)."""
    if method == "resubstitution":
        row = _uncounted_row(method, design.err_resub, "errors on the design data; optimistic (biased low)")
        return {method: row}
    if method == "holdout":
        return {method: _holdout_row(design)}
    if method in ("loo", "kfold"):
        return {method: _cross_validated_row(design, method)}
    if method in ("bootstrap632", "bootstrap632plus"):
        return _bootstrap632_rows(design)
    if not hasattr(design.estimator, "predict_proba"):
        raise TypeError(
            f"method 'risk_averaging' needs an estimator with predict_proba, got {type(design.estimator).__name__}"
        )
    return {
        method: _risk_averaging_row(
            design.estimator,
            design.full,
            design.X,
            design.y,
            unlabelled,
            design.cv,
            design.level,
            design.classes,
        )
    }


def _holdout_row(design: _Design) -> dict[str, Any]:
    from sklearn.base import clone
    from sklearn.model_selection import train_test_split

    y = design.y
    idx_train, idx_test = train_test_split(
        np.arange(y.size), test_size=design.test_size, stratify=y, random_state=design.holdout_seed
    )
    model = clone(design.estimator).fit(_take(design.X, idx_train), y[idx_train])
    wrong = np.asarray(model.predict(_take(design.X, idx_test))) != y[idx_test]
    return _counted_row(
        "holdout",
        wrong,
        design.level,
        f"trained on {idx_train.size} rows, tested on {idx_test.size}; "
        "pessimistic for the classifier trained on all rows; Wilson interval",
    )


def _cross_validated_row(design: _Design, method: str) -> dict[str, Any]:
    from sklearn.base import clone
    from sklearn.model_selection import LeaveOneOut, cross_val_predict

    if method == "kfold" and not design.folds:
        return _uncounted_row(method, np.nan, "not computed: a class has a single row")
    splitter = LeaveOneOut() if method == "loo" else design.cv
    pred = np.asarray(cross_val_predict(clone(design.estimator), design.X, design.y, cv=splitter))
    if method == "loo":
        what = "leave-one-out"
    else:
        lowered = design.folds < design.n_splits
        what = f"stratified {design.folds}-fold" + (
            f"; n_splits lowered from {design.n_splits} to {design.folds} (smallest class)" if lowered else ""
        )
    note = what + "; interval treats held-out predictions as independent (approximate)"
    return _counted_row(method, pred != design.y, design.level, note)


def _bootstrap632_rows(design: _Design) -> dict[str, dict[str, Any]]:
    y, n_resamples, err_resub = design.y, design.n_resamples, design.err_resub
    loss_sum, oob_count, redraws, failures = _bootstrap_errors(
        design.estimator, design.X, y, n_resamples, np.random.default_rng(design.boot_seed)
    )
    seen = oob_count > 0
    err1 = float(np.mean(loss_sum[seen] / oob_count[seen]))
    p_k = design.class_counts / y.size
    q_k = np.array([np.mean(design.resub_pred == c) for c in design.classes])
    gamma = float(np.sum(p_k * (1 - q_k)))
    err632, err632plus, r, w = _632(err_resub, err1, gamma)
    extra = ""
    if not seen.all():
        extra += f"; {int((~seen).sum())} rows never out of bag were skipped"
    if redraws:
        extra += f"; {redraws} one-class resamples redrawn"
    if failures:
        extra += f"; {failures} bootstrap fits failed and were skipped"
    return {
        "bootstrap632": _uncounted_row(
            "bootstrap632",
            err632,
            f"{n_resamples} bootstrap fits; Err(1)={err1:.4f}, resubstitution={err_resub:.4f}{extra}",
        ),
        "bootstrap632plus": _uncounted_row(
            "bootstrap632plus",
            err632plus,
            f"{n_resamples} bootstrap fits; gamma={gamma:.4f}, R={r:.3f}, w={w:.3f}{extra}",
        ),
    }


def _risk_averaging_row(
    estimator: Any,
    full: Any,
    X: Any,
    y: np.ndarray,
    unlabelled: Any,
    cv: Any,
    level: float,
    classes: np.ndarray,
) -> dict[str, Any]:
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_predict

    z = stats.norm.ppf(0.5 + level / 2)
    oof = None
    if cv is not None:
        oof = np.asarray(cross_val_predict(clone(estimator), X, y, cv=cv, method="predict_proba"))
    if unlabelled is not None:
        r = _risk(full.predict_proba(unlabelled), "predict_proba(unlabelled)")
        where = f"{r.size} unlabelled rows, classifier fit on all {y.size} labelled rows"
    elif oof is not None:
        r = _risk(oof, "predict_proba")
        where = f"out-of-fold probabilities of {r.size} rows"
    else:
        raise ValueError("risk_averaging needs unlabelled rows or at least two rows per class")
    est = float(r.mean())
    se = float(r.std(ddof=1) / np.sqrt(r.size)) if r.size > 1 else np.nan
    lo, hi = _normal_interval(est, se, level)
    note = where
    if oof is not None:
        # counted errors on the same out-of-fold predictions: paired comparison
        wrong = classes[np.argmax(oof, axis=1)] != y
        r_oof = _risk(oof, "predict_proba")
        counted = float(wrong.mean())
        if unlabelled is None:
            d = wrong - r_oof
            se_d = float(d.std(ddof=1) / np.sqrt(d.size))
            diff = float(d.mean())
        else:
            diff = counted - est
            se_c = np.sqrt(counted * (1 - counted) / y.size)
            se_d = float(np.hypot(se, se_c))
        note += f"; counted out-of-fold error {counted:.4f}"
        if se_d > 0 and abs(diff) > z * se_d:
            direction = "overconfident" if diff > 0 else "underconfident"
            note += f" disagrees (difference {diff:+.4f}, se {se_d:.4f}): probabilities look {direction}"
            warnings.warn(
                f"risk averaging ({est:.4f}) disagrees with the counted out-of-fold error "
                f"({counted:.4f}) by {diff:+.4f}, more than {z:.2f} standard errors "
                f"({se_d:.4f}); the classifier's probabilities look {direction}, so the "
                "label-free estimate is not trustworthy without recalibration",
                CalibrationWarning,
                stacklevel=5,  # _risk_averaging_row < _method_rows < estimate_error < shim < caller
            )
        else:
            note += " agrees within its uncertainty"
    return {
        "method": "risk_averaging",
        "estimate": est,
        "se": se,
        "lower": lo,
        "upper": hi,
        "notes": note + "; valid only if the probabilities are calibrated",
    }


def _drop_missing_rows(proba: Any, strata: Any) -> tuple[np.ndarray, Any]:
    """Rows of ``proba`` (and ``strata``) without a missing probability or stratum."""
    p = np.asarray(proba.to_numpy() if isinstance(proba, (pd.Series, pd.DataFrame)) else proba)
    if p.ndim not in (1, 2):
        return p, strata
    keep = ~missing_mask(p)
    if strata is not None:
        keys = as_row_array(strata)
        if keys.shape != keep.shape:
            raise ValueError(f"strata must have one label per row ({keep.size}), got shape {keys.shape}")
        keep &= ~missing_mask(keys)
        strata = keys[keep]
    if not keep.any():
        raise ValueError("every row of proba (or strata) has a missing value; nothing is left after dropna")
    return p[keep], strata


def risk_averaging(proba: Any, *, strata: Any = None, dropna: bool = False) -> float | pd.Series:
    r"""Label-free error estimate: the mean conditional risk :math:`1 - \max_k P(k \mid x)`.

    For a calibrated classifier the conditional probability of error of the
    Bayes-rule decision at ``x`` is :math:`r(x) = 1 - \max_k P(k \mid x)`, so
    its mean over rows estimates the error rate without any label (Fukunaga
    1990, section 5.3). Per stratum, it gives a prior guess of each stratum's
    error rate (e.g. ``prior_mean`` of :func:`bayeseval.fit_hierarchical`).

    Parameters
    ----------
    proba : array-like, shape (n, n_classes) or (n,)
        Class probabilities from ``predict_proba``; a 1-D array is read as
        P(class 1) of a two-class problem.
    strata : array-like of shape (n,), optional
        Stratum label of each row. A Series is paired with a DataFrame or
        Series ``proba`` by index label.
    dropna : bool, default False
        A row with a missing probability or stratum (NaN, None, pd.NA) is an
        error naming the argument and the rows; ``dropna=True`` drops such
        rows instead.

    Returns
    -------
    float or pandas.Series
        The mean risk; with ``strata`` a Series indexed by stratum (sorted),
        named ``"risk_averaging"``.

    Examples
    --------
    >>> risk_averaging([[0.9, 0.1], [0.6, 0.4]])
    0.25
    >>> risk_averaging([0.9, 0.2, 0.5], strata=["a", "a", "b"]).round(3).tolist()
    [0.15, 0.5]
    """
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {dropna!r}")
    name = getattr(strata, "name", None)
    proba, strata = align_by_label(("proba", proba), ("strata", strata))
    if dropna:
        proba, strata = _drop_missing_rows(proba, strata)
    r = _risk(proba)
    if strata is None:
        return float(r.mean())
    keys = as_row_array(strata)
    if keys.shape != r.shape:
        raise ValueError(f"strata must have one label per row ({r.size}), got shape {keys.shape}")
    check_no_missing(keys, "strata", hint="every row needs a stratum; drop or fill them, or pass dropna=True")
    out = pd.Series(r).groupby(keys).mean()
    out.index.name = name or "stratum"
    out.name = "risk_averaging"
    return out


def error_reject_curve(
    proba: Any,
    y_true: Any = None,
    thresholds: Any = None,
    *,
    classes: Sequence[Hashable] | None = None,
) -> pd.DataFrame:
    r"""The error-reject trade-off of Chow's rule, counted and label-free.

    Chow's rule rejects a row when its conditional risk
    :math:`r(x) = 1 - \max_k P(k \mid x)` exceeds the threshold :math:`t`
    (:math:`0 \le t \le 1 - 1/K`). The reject rate is
    :math:`R(t) = P(r(x) > t)` and the probability of an accepted error is
    (Chow 1970, eq. 13)

    .. math:: E(t) = -\int_0^t \tau \, dR(\tau) = \int_0^t R(\tau)\, d\tau - t\,R(t),

    the second form by integration by parts, so the error follows from the reject-rate
    curve alone, with no label (Fukunaga & Kessell 1972). At :math:`t = 1 - 1/K` nothing
    is rejected and :math:`E` is the overall error (the risk-averaging estimate). The
    error rate among accepted rows is :math:`E(t) / (1 - R(t))`, with :math:`R` the
    empirical (step) reject-rate curve of ``proba``, integrated exactly. Like risk
    averaging, it is only as good as the probabilities' calibration.

    Parameters
    ----------
    proba : array-like, shape (n, n_classes) or (n,)
        Class probabilities (a 1-D array is P(class 1) of two classes).
    y_true : array-like of shape (n,), optional
        True labels (none missing); when given, the counted error of accepted
        rows is added. A Series is paired with a DataFrame or Series ``proba``
        by index label.
    thresholds : array-like, optional
        Risk thresholds ``t``; default 51 points from 0 to 1 - 1/K.
    classes : sequence, optional
        Labels of the columns of ``proba`` (e.g. ``estimator.classes_``);
        default 0, ..., K-1.

    Returns
    -------
    pandas.DataFrame
        Columns ``threshold, reject_rate, n_accepted, error_of_accepted``
        (counted; NaN without ``y_true`` or when nothing is accepted),
        ``estimated_error_of_accepted`` (:math:`E(t)/(1-R(t))`) and
        ``estimated_error`` (:math:`E(t)`, accepted errors per row).

    Examples
    --------
    >>> curve = error_reject_curve([[0.9, 0.1], [0.6, 0.4]], y_true=[0, 1],
    ...                            thresholds=[0.2, 0.5])
    >>> cols = ["reject_rate", "error_of_accepted", "estimated_error_of_accepted"]
    >>> curve[cols].round(3).values.tolist()
    [[0.5, 0.0, 0.1], [0.0, 0.5, 0.25]]
    """
    proba, y_true = align_by_label(("proba", proba), ("y_true", y_true))
    r = _risk(proba)
    p = np.asarray(proba, dtype=float)
    t = _thresholds(thresholds, 2 if p.ndim == 1 else p.shape[1])
    # R(t) = share of rows with r > t; integral of R from 0 to t = mean(min(r, t))
    accepted = r[None, :] <= t[:, None]
    reject_rate = 1.0 - accepted.mean(axis=1)
    est_error = np.minimum(r[None, :], t[:, None]).mean(axis=1) - t * reject_rate
    n_acc = accepted.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        est_acc = np.where(n_acc > 0, est_error / (1.0 - reject_rate), np.nan)
    counted = np.full(t.size, np.nan)
    if y_true is not None:
        wrong = _wrong_decisions(p, y_true, classes)
        errs = (accepted & wrong[None, :]).sum(axis=1)
        counted = np.where(n_acc > 0, errs / np.maximum(n_acc, 1), np.nan)
    return pd.DataFrame(
        {
            "threshold": t,
            "reject_rate": reject_rate,
            "n_accepted": n_acc.astype(np.int64),
            "error_of_accepted": counted,
            "estimated_error_of_accepted": est_acc,
            "estimated_error": est_error,
        }
    )


def _thresholds(thresholds: Any, k: int) -> np.ndarray:
    """Validated risk thresholds; 51 points from 0 to 1 - 1/k by default."""
    if thresholds is None:
        return np.linspace(0.0, 1.0 - 1.0 / k, 51)
    t = np.atleast_1d(np.asarray(thresholds, dtype=float))
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t > 1):
        raise ValueError(f"thresholds must be finite numbers in [0, 1], got {thresholds!r}")
    return t


def _wrong_decisions(p: np.ndarray, y_true: Any, classes: Any) -> np.ndarray:
    """Whether the most probable class of each row differs from its true label."""
    k = 2 if p.ndim == 1 else p.shape[1]
    n = p.shape[0]
    yt = as_row_array(y_true)
    if yt.shape != (n,):
        raise ValueError(f"y_true must have one label per row ({n}), got shape {yt.shape}")
    check_no_missing(yt, "y_true", hint="every row needs a label; drop those rows first")
    check_class_labels(yt, "y_true")
    labels = np.arange(k) if classes is None else np.asarray(classes)
    if labels.size != k:
        raise ValueError(f"classes must name the {k} columns of proba, got {len(labels)}")
    pk = np.column_stack([1 - p, p]) if p.ndim == 1 else p
    return labels[np.argmax(pk, axis=1)] != yt


@fill_doc()
def plot_error_reject(curve: pd.DataFrame, ax: Any = None) -> Any:
    """Plot the error of accepted rows against the reject rate (drawn by :func:`bayeseval.plots.error_reject`).

    Parameters
    ----------
    curve : pandas.DataFrame
        Output of :func:`error_reject_curve`.
    {ax}

    {error_reject_returned}

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = plot_error_reject(error_reject_curve([[0.9, 0.1], [0.6, 0.4]], [0, 1]), ax=Figure().subplots())
    >>> ax.get_xlabel()
    'reject rate'
    """
    from bayeseval.plots.estimates import error_reject  # deferred: matplotlib only when drawing

    return error_reject(curve, ax=ax)
