"""Beta-binomial and Beta-mixture predictive distributions of a count: probabilities of
every count, and both tails of an observed count, in logs, at any number of trials.

* :func:`beta_mixture_predictive` -- the prior-predictive pmf of ``0..n`` successes under a
  mixture of Beta distributions;
* :func:`betabinom_log_tails` -- ``log P(X <= s)`` and ``log P(X >= s)`` under
  Beta-binomials, exact sums in logs with a quadrature for very large counts;
* :func:`beta_mixture_log_tails` -- the same under a Beta mixture per stratum;
* :func:`units_log_likelihood` -- the log likelihood of strata of sampling units (a histogram of
  unit successes and sizes) over a grid of the mean unit accuracy, at a within-unit concentration.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

__all__ = [
    "beta_mixture_predictive",
    "beta_mixture_log_tails",
    "betabinom_log_tails",
    "kept_components",
    "mixture_pmfs",
    "units_log_likelihood",
]


def beta_mixture_predictive(n: int, weights: Any, a: Any, b: Any) -> np.ndarray:
    """Prior-predictive pmf of a binomial count under a mixture of Beta distributions.

    Parameters
    ----------
    n : int
        Number of trials.
    weights, a, b : array_like, shape (G,)
        Mixture weights (summing to 1) and Beta parameters of the components.

    Returns
    -------
    numpy.ndarray, shape (n + 1,)
        ``sum_g weights[g] * BetaBinomial(k; n, a[g], b[g])`` for ``k = 0..n``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> pmf = beta_mixture_predictive(10, [1.0], [2.0], [8.0])
    >>> bool(np.allclose(pmf, stats.betabinom.pmf(np.arange(11), 10, 2.0, 8.0)))
    True
    """
    w = np.asarray(weights, float).ravel()[None, :]
    a, b = np.asarray(a, float).ravel()[None, :], np.asarray(b, float).ravel()[None, :]
    if not np.any(w):  # no weight: no predictive
        return np.full(n + 1, np.nan)
    return mixture_pmfs(n, *kept_components(w, a, b))[0]


def kept_components(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
    """Per row, the components the predictive keeps, largest weight first.

    The non-zero weights of each row (in grid order) are sorted in decreasing order and
    kept until they hold all but 1e-6 of the row's weight (no probability that matters
    changes; an adaptive interval stays exact whatever prior it is given). Returns ``(weights, a, b, live)``
    of shape (R, C), padded with weight 0 and Beta(1, 1) where ``live`` is False (a row
    without non-zero weights keeps nothing).
    """
    r, g = np.nonzero(w)
    counts = np.bincount(r, minlength=w.shape[0])
    pos = np.arange(r.size) - np.repeat(np.cumsum(counts) - counts, counts)
    P = np.zeros((w.shape[0], int(counts.max()) if counts.size else 0))
    P[r, pos] = w[r, g]
    total = P.sum(axis=1)
    order = np.argsort(P, axis=1)[:, ::-1]
    cs = np.cumsum(np.take_along_axis(P, order, axis=1), axis=1)
    size = np.minimum((cs < ((1.0 - 1e-6) * total)[:, None]).sum(axis=1) + 1, counts)
    order = order[:, : int(size.max())]
    live = np.arange(order.shape[1])[None, :] < size[:, None]
    out = []
    for v, pad in ((w, 0.0), (a, 1.0), (b, 1.0)):
        dense = np.full(P.shape, pad)
        dense[r, pos] = v[r, g]
        out.append(np.where(live, np.take_along_axis(dense, order, axis=1), pad))
    return (*out, live)


def mixture_pmfs(n: int, kw: np.ndarray, ka: np.ndarray, kb: np.ndarray, live: np.ndarray) -> np.ndarray:
    """:func:`beta_mixture_predictive` of rows of kept components (:func:`kept_components`),
    all with ``n`` trials (padding components add exact zeros), computed for the rows at once.

    Each distinct ``(a, b)`` pair among the live components is computed once (rows that share
    a hyper-grid share their components): its log pmf by the ratio recursion, scaled by its
    mode, whose probability is at least ``1 / (n + 1)``; the rows' pmfs are then one matrix
    product of the weights (times the modes' probabilities) with these scaled pmfs. A term
    below ``e^-745`` of its component's mode is 0, as in any sum of doubles.
    """
    kw, ka, kb, live = (np.asarray(v) for v in (kw, ka, kb, live))
    rows, cols = np.nonzero(live)
    pairs, inv = np.unique(np.column_stack([ka[rows, cols], kb[rows, cols]]), axis=0, return_inverse=True)
    pa, pb = pairs[:, :1], pairs[:, 1:]
    k = np.arange(n, dtype=float)[None, :]
    # log pmf by the ratio recursion pmf(k+1)/pmf(k) = (n-k)(k+a) / ((k+1)(n-k-1+b))
    log_bb = np.empty((pairs.shape[0], n + 1))
    log_bb[:, :1] = special.betaln(pa, n + pb) - special.betaln(pa, pb)
    np.cumsum(np.log((n - k) / (k + 1.0)) + np.log(k + pa) - np.log(n - k - 1.0 + pb), axis=1, out=log_bb[:, 1:])
    log_bb[:, 1:] += log_bb[:, :1]
    top = log_bb.max(axis=1)
    log_bb -= top[:, None]
    scaled = np.exp(log_bb, out=log_bb)
    weights = np.zeros((kw.shape[0], pairs.shape[0]))
    np.add.at(weights, (rows, inv.ravel()), kw[rows, cols] * np.exp(top[inv.ravel()]))
    pmf = weights @ scaled
    return pmf / pmf.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- tails

#: cells (pairs x counts) of one block of the tail sums
_TAIL_CELLS = 1 << 20
#: a tail sum stops when what is left of it is at most this fraction of it (2^-60)
_TAIL_LOG_TOL = -60.0 * np.log(2.0)


def _betabinom_logpmf(k: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log Beta-binomial pmf, ``log C(n, k) + log B(k + a, n - k + b) - log B(a, b)``."""
    return special.betaln(k + a, n - k + b) - special.betaln(a, b) - np.log1p(n) - special.betaln(n - k + 1.0, k + 1.0)


def _decreasing_from(pos: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, step: int) -> np.ndarray:
    """Whether the pmf decreases from count ``pos`` on, toward 0 (``step`` -1) or ``n`` (+1).

    ``pmf(k) >= pmf(k - 1)`` exactly when ``d(k) = k (2 - a - b) + (n + 1)(a - 1) >= 0``,
    linear in ``k``: the sign on a range of counts is that of its two ends.
    """

    def d(k: float | np.ndarray) -> np.ndarray:
        return k * (2.0 - a - b) + (n + 1.0) * (a - 1.0)

    if step < 0:
        return (d(1.0) >= 0) & (d(np.maximum(pos, 1.0)) >= 0)
    return (d(np.minimum(pos + 1.0, n)) <= 0) & (d(n) <= 0)


def _log_side(s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, log_at: np.ndarray, step: int) -> np.ndarray:
    """``log sum_{j >= 1} pmf(s + step j)`` over counts in ``0..n``, per (count, component).

    The terms are summed outward from ``s`` in blocks, each from the last by the ratio
    recursion (in logs, scaled by the running maximum), and the sum stops once the pmf
    decreases on what is left and (terms left) x (last term) is below ``2^-60`` of it, or
    after :data:`_MAX_TERMS` terms with that bound added (an upper bound of the tail; it
    happens only for components that fall very slowly at hundreds of millions of trials).
    """
    M = np.full(s.size, -np.inf)
    S = np.zeros(s.size)
    last, pos = log_at.copy(), s.copy()
    left = n - s if step > 0 else s.copy()
    active = np.flatnonzero(left > 0)
    length = 64
    while active.size:
        size = int(min(length, left[active].max()))
        j = np.arange(size, dtype=float)[None, :]
        for i in range(0, active.size, max(1, _TAIL_CELLS // size)):
            r = active[i : i + max(1, _TAIL_CELLS // size)]
            ri, ai, bi, k = n[r, None], a[r, None], b[r, None], pos[r, None] + step * j
            if step > 0:  # pmf(k + 1) / pmf(k)
                ratio = (ri - k) * (k + ai) / ((k + 1.0) * (ri - k - 1.0 + bi))
            else:  # pmf(k - 1) / pmf(k)
                ratio = k * (ri - k + bi) / ((ri - k + 1.0) * (k - 1.0 + ai))
            valid = j < left[r, None]
            with np.errstate(divide="ignore"):
                x = last[r, None] + np.cumsum(np.log(np.where(valid, ratio, 1.0)), axis=1)
            x[~valid] = -np.inf
            top = np.maximum(M[r], x.max(axis=1))
            with np.errstate(invalid="ignore"):
                S[r] = S[r] * np.exp(M[r] - top) + np.exp(x - top[:, None]).sum(axis=1)
            M[r] = top
            took = np.minimum(size, left[r])
            last[r] = x[np.arange(r.size), (took - 1).astype(np.intp)]
            pos[r] += step * took
            left[r] -= took
        rest = np.log(np.maximum(left[active], 1.0)) + last[active]
        done = (left[active] <= 0) | (
            _decreasing_from(pos[active], n[active], a[active], b[active], step)
            & (rest <= _TAIL_LOG_TOL + M[active] + np.log(S[active]))
        )
        # past the cap, what is left is bounded by (terms left) x (last term), added to the
        # sum: the tail is then an upper bound (a larger p-value, the safe side)
        capped = ~done & (np.abs(pos[active] - s[active]) >= _MAX_TERMS)
        r = active[capped]
        top = np.maximum(M[r], rest[capped])
        with np.errstate(invalid="ignore"):
            S[r] = S[r] * np.exp(M[r] - top) + np.exp(rest[capped] - top)
        M[r] = top
        active = active[~(done | capped)]
        length = min(4 * length, 1 << 16)
    with np.errstate(divide="ignore"):
        return M + np.log(S)


def betabinom_log_tails(successes: Any, trials: Any, a: Any, b: Any) -> tuple:
    """``log P(Y < s)``, ``log P(Y = s)`` and ``log P(Y > s)`` under ``BetaBinomial(n, a, b)``.

    Computed in logs, so no tail is rounded to 0 or 1. Where the component is wider than
    the binomial spread of the count (the pmf sums would be long) and ``50 <= s <= n - 50``,
    by the identity ``P(Y <= m) = E[I_X(a, b)]``, ``X ~ Beta(m + 1, n - m)``, with a
    20-point Gauss-Hermite rule on ``logit X`` centred at the integrand's mode. Elsewhere,
    and for tails below ``exp(-600)``, by sums of the pmf: the tail on the side of ``s``
    away from the mean is summed outward from ``s`` by the ratio recursion until the rest
    is below ``2^-60`` of it; the other tail is one minus the first and ``P(Y = s)`` where
    that holds at least 1%, else summed the same way. A count far in a tail costs a few
    dozen terms whatever the number of trials. Relative error against SciPy's Beta-binomial
    pmf: docs/validation.md, section 12a. Arguments broadcast; ``a, b > 0``.

    Examples
    --------
    >>> from scipy import stats
    >>> lo, at, hi = betabinom_log_tails(3, 40, 8.0, 12.0)
    >>> bool(np.isclose(np.exp(lo), stats.betabinom.cdf(2, 40, 8.0, 12.0)))
    True
    >>> bool(np.isclose(np.exp(hi), stats.betabinom.sf(3, 40, 8.0, 12.0)))
    True
    """
    s, n, a, b = (np.asarray(v, float) for v in np.broadcast_arrays(successes, trials, a, b))
    shape = s.shape
    s, n, a, b = (v.ravel() for v in (s, n, a, b))
    log_at = _betabinom_logpmf(s, n, a, b)
    tails = np.full((2, s.size), np.nan)  # lower, upper
    quad = np.flatnonzero(_quadrature_applies(s, n, a, b))
    if quad.size:
        with np.errstate(all="ignore"):
            tails[0, quad] = _log_tail_quadrature(s[quad] - 1.0, n[quad], a[quad], b[quad], False)
            tails[1, quad] = _log_tail_quadrature(s[quad], n[quad], a[quad], b[quad], True)
    tails[:, quad] = np.where(tails[:, quad] > _QUAD_FLOOR, tails[:, quad], np.nan)
    # a component narrower than the binomial spread, where the sums would be long
    wide = np.flatnonzero(_binomial_quadrature_applies(s, n, a, b) & np.isnan(tails).any(axis=0))
    if wide.size:
        with np.errstate(all="ignore"):
            both = np.stack(
                [
                    _log_tail_binomial_quadrature(s[wide] - 1.0, n[wide], a[wide], b[wide], False),
                    _log_tail_binomial_quadrature(s[wide], n[wide], a[wide], b[wide], True),
                ]
            )
        tails[:, wide] = np.where(both > _BINOM_QUAD_FLOOR, both, np.nan)
    # elsewhere, and where a quadrature's tail is far out (its nodes could underflow, or the
    # integrand is no longer smooth at the component's scale): sums of the pmf, which are
    # short there
    summed = ~np.isfinite(tails).all(axis=0)
    idx = np.flatnonzero(summed)
    tails[:, idx] = _summed_tails(s[idx], n[idx], a[idx], b[idx], log_at[idx])
    tails = np.minimum(tails, 0.0)  # a quadrature tail near 1 can exceed it by ~1e-10
    return tuple(v.reshape(shape) for v in (tails[0], log_at, tails[1]))


#: a side of more counts than this is long to sum
_LONG_SIDE = 1 << 16
#: a tail sum stops after this many terms, with a bound for the rest (seconds at most)
_MAX_TERMS = 1 << 18


def _summed_tails(s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, log_at: np.ndarray) -> np.ndarray:
    """(log P(Y < s), log P(Y > s)) by summing the pmf (:func:`_log_side`): the side away
    from the mean, then the other by complement where that holds at least 1%."""
    tails = np.empty((2, s.size))
    low_first = s * (a + b) <= n * a
    for side, sel in ((0, low_first), (1, ~low_first)):
        idx = np.flatnonzero(sel)
        tails[side, idx] = _log_side(s[idx], n[idx], a[idx], b[idx], log_at[idx], 2 * side - 1)
        # the other side by complement where it holds at least 1% (error below 1e-13 of it)
        with np.errstate(divide="ignore"):
            rest = np.log1p(-np.minimum(np.exp(tails[side, idx]) + np.exp(log_at[idx]), 1.0))
        # the complement's error is about 1e-16 absolute: trusted where the tail is at least
        # 1%, and down to 1e-10 (relative error 1e-6) where summing it would take more than
        # 2^16 terms (a wide component at many trials, whose pmf falls slowly)
        other = n[idx] - s[idx] if side == 0 else s[idx]
        far = rest < np.where(other > _LONG_SIDE, np.log(1e-10), np.log(0.01))
        tails[1 - side, idx] = rest
        idx = idx[far]
        tails[1 - side, idx] = _log_side(s[idx], n[idx], a[idx], b[idx], log_at[idx], 1 - 2 * side)
    return tails


#: probabilists' Gauss-Hermite rule (weight exp(-u^2 / 2)), log weights times exp(u^2 / 2)
_GH_U, _GH_W = np.polynomial.hermite_e.hermegauss(20)
_GH_LOGW = np.log(_GH_W) + 0.5 * _GH_U**2
#: the quadrature needs Beta(m + 1, n - m) parameters at least this large (near-normal logit)
_QUAD_MIN_SHAPE = 50.0
#: ... and a component this many times wider than it (logit-scale variance)
_QUAD_MIN_SPREAD = 4.0
#: tails below exp(-600) are summed instead (the integrand's nodes could underflow)
_QUAD_FLOOR = -600.0


#: Gauss-Hermite rule of the binomial-side quadrature (40 points)
_GH40_U, _GH40_W = np.polynomial.hermite_e.hermegauss(40)
_GH40_LOGW = np.log(_GH40_W) + 0.5 * _GH40_U**2
#: the binomial-side quadrature serves counts whose binomial spread is at least this (long sums)
_BINOM_QUAD_MIN_SD = 256.0
#: ... for tails above exp(-30); smaller tails are summed (they lie where the pmf falls fast)
_BINOM_QUAD_FLOOR = -30.0


def _binomial_quadrature_applies(s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs whose tails :func:`_log_tail_binomial_quadrature` computes: a near-normal
    component on the logit scale (``a, b >= 50``) and a binomial spread of the count so
    large that summing the pmf would take hundreds of thousands of terms."""
    mu = a / (a + b)
    return (a >= _QUAD_MIN_SHAPE) & (b >= _QUAD_MIN_SHAPE) & (n * mu * (1.0 - mu) >= _BINOM_QUAD_MIN_SD**2)


def _log_tail_binomial_quadrature(
    m: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, upper: bool
) -> np.ndarray:
    """``log P(Y <= m)`` (or ``log P(Y > m)`` when ``upper``), ``Y ~ BetaBinomial(n, a, b)``,
    as ``E[P(Bin(n, Theta) <= m)]`` over ``Theta ~ Beta(a, b)``: 40-point Gauss-Hermite on
    ``logit Theta`` (mode ``log(a / b)``, scale ``sqrt(1/a + 1/b)``), binomial tails from SciPy
    in logs. Where the component is narrow against the binomial spread the integrand is smooth
    at the component's scale (relative error against summed pmfs: docs/validation.md,
    section 12a)."""
    from scipy import stats  # deferred: SciPy's stats module is slow to import

    t = np.log(a / b)[:, None] + np.sqrt(1.0 / a + 1.0 / b)[:, None] * _GH40_U[None, :]
    log_f = a[:, None] * special.log_expit(t) + b[:, None] * special.log_expit(-t) - special.betaln(a, b)[:, None]
    theta = special.expit(t)
    tail = stats.binom.logsf if upper else stats.binom.logcdf
    log_g = tail(m[:, None], n[:, None], theta)
    return special.logsumexp(log_f + log_g + _GH40_LOGW[None, :], axis=1) + 0.5 * np.log(1.0 / a + 1.0 / b)


def _quadrature_applies(s: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs whose tails :func:`_log_tail_quadrature` computes: ``Beta(m + 1, n - m)`` near
    normal on the logit scale for ``m = s - 1`` and ``s``, and the component wider (the
    pairs whose pmf sums would be long)."""
    ok = (s >= _QUAD_MIN_SHAPE) & (n - s >= _QUAD_MIN_SHAPE)
    spread_x = special.polygamma(1, np.maximum(s, 1.0)) + special.polygamma(1, np.maximum(n - s, 1.0))
    spread = special.polygamma(1, a) + special.polygamma(1, b)
    return ok & (spread >= _QUAD_MIN_SPREAD * spread_x)


def _log_cdf_in_t(
    t: np.ndarray, a: np.ndarray, b: np.ndarray, upper: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``log I_x(a, b)`` (or ``log (1 - I_x(a, b))`` when ``upper``) at ``x = expit(t)`` and
    its first and second derivatives in ``t``."""
    x = special.expit(t)
    val = special.betainc(b, a, special.expit(-t)) if upper else special.betainc(a, b, x)
    log_val = np.log(val)
    # d/dt I_x(a, b) = x^a (1 - x)^b / B(a, b); d/dt of that = (a - (a + b) x) times it
    q = np.exp(a * special.log_expit(t) + b * special.log_expit(-t) - special.betaln(a, b) - log_val)
    q = -q if upper else q
    return log_val, q, q * (a - (a + b) * x) - q * q


def _log_tail_quadrature(m: np.ndarray, n: np.ndarray, a: np.ndarray, b: np.ndarray, upper: bool) -> np.ndarray:
    """``log P(Y <= m)`` (or ``log P(Y > m)`` when ``upper``), ``Y ~ BetaBinomial(n, a, b)``.

    ``P(Y <= m) = P(Theta < X) = E[I_X(a, b)]`` for ``Theta ~ Beta(a, b)`` and
    ``X ~ Beta(m + 1, n - m)`` independent (a binomial tail is a Beta tail), integrated on
    ``t = logit X`` by 20-point Gauss-Hermite centred at the integrand's mode with its
    curvature (six Newton steps from the mean of ``t``).
    """
    al, be = m + 1.0, n - m
    t = special.digamma(al) - special.digamma(be)
    for step in range(7):
        d1, d2 = _log_cdf_in_t(t, a, b, upper)[1:]
        x = special.expit(t)
        curv = (al + be) * x * (1.0 - x) - d2
        if step == 6:
            break
        t = t + (al - (al + be) * x + d1) / curv
    scale = 1.0 / np.sqrt(curv)
    tt = t[:, None] + scale[:, None] * _GH_U[None, :]
    log_g = _log_cdf_in_t(tt, a[:, None], b[:, None], upper)[0]
    log_f = al[:, None] * special.log_expit(tt) + be[:, None] * special.log_expit(-tt) - special.betaln(al, be)[:, None]
    return special.logsumexp(log_f + log_g + _GH_LOGW[None, :], axis=1) + np.log(scale)


def beta_mixture_log_tails(successes: Any, trials: Any, weights: Any, a: Any, b: Any) -> tuple:
    """Log tails of counts under Beta-binomial mixtures, one mixture per count.

    Parameters
    ----------
    successes, trials : array_like of int, shape (S,)
        Counts.
    weights, a, b : array_like, shape (S, C)
        Mixture weights (each row with a positive sum; normalised here) and Beta parameters.

    Returns
    -------
    below, at, above : numpy.ndarray, shape (S,)
        ``log P(Y < s)``, ``log P(Y = s)`` and ``log P(Y > s)`` under
        ``sum_c weights[c] BetaBinomial(n, a[c], b[c])`` (:func:`betabinom_log_tails` per
        component with non-zero weight, combined by log-sum-exp): exact in logs, so tails
        far below the smallest double (``exp(-745)``) keep falling as the evidence grows.

    Examples
    --------
    A stratum at 0.10 against a predictive at 0.20 with a million trials: the lower tail
    is about ``exp(-3950)``, far below what a double holds.

    >>> lo, at, hi = beta_mixture_log_tails([100_000], [1_000_000], [[1.0]], [[2e4]], [[8e4]])
    >>> bool(-5e3 < lo[0] < -1e3), float(np.exp(lo[0])), bool(abs(np.exp(hi[0]) - 1) < 1e-12)
    (True, 0.0, True)
    """
    s, n = (np.asarray(v, float).ravel() for v in (successes, trials))
    w = np.asarray(weights, float).reshape(s.size, -1)
    a, b = (np.broadcast_to(np.asarray(v, float), w.shape) for v in (a, b))
    rows, cols = np.nonzero(w > 0)
    with np.errstate(divide="ignore"):
        log_w = np.log(w[rows, cols]) - np.log(w.sum(axis=1))[rows]
    tails = _pruned_tails(s, n, a, b, rows, cols, log_w)
    out = []
    for t in tails:
        dense = np.full(w.shape, -np.inf)
        dense[rows, cols] = log_w + t
        out.append(special.logsumexp(dense, axis=1))
    return tuple(out)


#: a component whose far tail is below the mixture's by this many nats is not summed
_PRUNE_NATS = 40.0


def _pruned_tails(
    s: np.ndarray,
    n: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    log_w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`betabinom_log_tails` of the (row, column) components of a mixture, skipping
    the far tails that cannot matter.

    On the side of ``s`` away from a unimodal component's mean (``a, b >= 1``) its pmf falls
    away from ``s``, so that tail is at most (counts on that side) x ``pmf(s)``; the
    mixture's tail on that side is at least the largest ``w pmf(s -/+ 1)``. A component whose
    bound is ``_PRUNE_NATS`` below that changes the mixture's tail by less than ``e^-40`` of
    it: its far tail is set to the bound's ``-inf`` and its near tail to
    ``log(1 - pmf(s))`` (exact to ``e^-40``), without summing millions of terms where the
    trials are many and the component far away.
    """
    ss, nn, aa, bb = s[rows], n[rows], a[rows, cols], b[rows, cols]
    log_at = _betabinom_logpmf(ss, nn, aa, bb)
    low_far = ss * (aa + bb) <= nn * aa  # the lower tail is the side away from the mean
    with np.errstate(divide="ignore", invalid="ignore"):
        nxt = _betabinom_logpmf(np.where(low_far, ss - 1.0, ss + 1.0), nn, aa, bb)
        size = np.log(np.maximum(np.where(low_far, ss, nn - ss), 1.0))
    nxt = np.where(np.isnan(nxt), -np.inf, nxt)  # no count beyond 0 or n: an empty side
    floor = np.full((2, s.size), -np.inf)
    for side in (0, 1):  # the mixture's tail on each side is at least its best next term
        sel = low_far == (side == 0)
        np.maximum.at(floor[side], rows[sel], log_w[sel] + nxt[sel])
    bound = log_w + size + log_at
    skip = (
        (aa >= 1.0)
        & (bb >= 1.0)
        & (log_at + size < -_PRUNE_NATS)
        & (bound < np.where(low_far, floor[0, rows], floor[1, rows]) - _PRUNE_NATS)
    )
    lo, at, hi = (np.full(rows.size, np.nan) for _ in range(3))
    keep = np.flatnonzero(~skip)
    lo[keep], at[keep], hi[keep] = betabinom_log_tails(ss[keep], nn[keep], aa[keep], bb[keep])
    drop = np.flatnonzero(skip)
    at[drop] = log_at[drop]
    with np.errstate(divide="ignore"):
        near = np.log1p(-np.exp(log_at[drop]))
    lo[drop] = np.where(low_far[drop], -np.inf, near)
    hi[drop] = np.where(low_far[drop], near, -np.inf)
    return lo, at, hi


def units_log_likelihood(theta: Any, kappa: float, successes: Any, trials: Any, multiplicity: Any) -> np.ndarray:
    """Log likelihood of each stratum's units over a grid of its mean unit accuracy ``theta``.

    A stratum's unit ``i`` has accuracy ``p_i ~ Beta(theta kappa, (1 - theta) kappa)`` and
    ``a_i | p_i ~ Binomial(m_i, p_i)``, so ``a_i ~ BetaBinomial(m_i, theta kappa, (1 - theta) kappa)``.
    The units come as a histogram: distinct pairs ``(a_j, m_j)`` and, per stratum, how many
    units have each pair; the cost grows with the distinct pairs, not the rows.

    Parameters
    ----------
    theta : array_like, shape (T,)
        Points in (0, 1).
    kappa : float
        Within-stratum concentration (``inf``: every unit at ``theta``, the binomial).
    successes, trials : array_like, shape (P,)
        The distinct pairs ``(a_j, m_j)`` (integers, ``0 <= a_j <= m_j``).
    multiplicity : array_like, shape (K, P)
        Units of each pair in each stratum.

    Returns
    -------
    numpy.ndarray, shape (T, K)
        ``sum_j multiplicity[k, j] * log BetaBinomial(a_j; m_j, theta kappa, (1 - theta) kappa)``
        without the binomial coefficients (which do not depend on ``theta`` or ``kappa``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> ll = units_log_likelihood([0.3], 4.0, [1, 2], [3, 2], [[2, 1]])
    >>> ref = 2 * stats.betabinom.logpmf(1, 3, 1.2, 2.8) - 2 * np.log(3) + stats.betabinom.logpmf(2, 2, 1.2, 2.8)
    >>> bool(np.isclose(ll[0, 0], ref))
    True
    """
    t = np.asarray(theta, float).ravel()[:, None]
    a = np.asarray(successes, float).ravel()[None, :]
    m = np.asarray(trials, float).ravel()[None, :]
    mult = np.atleast_2d(np.asarray(multiplicity, float))
    if np.isinf(kappa):
        per = special.xlogy(a, t) + special.xlog1py(m - a, -t)
    else:
        x, y = t * kappa, (1.0 - t) * kappa
        per = (
            special.gammaln(x + a)
            - special.gammaln(x)
            + special.gammaln(y + m - a)
            - special.gammaln(y)
            - (special.gammaln(kappa + m) - special.gammaln(kappa))
        )
    return per @ mult.T
