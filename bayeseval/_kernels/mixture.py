r"""Mixtures of Beta distributions over the nodes of a hyperparameter grid.

A hierarchical Beta-binomial posterior integrated on a grid of hyperparameter nodes ``g``
(weights ``w_g``, summing to 1) gives each rate ``theta_k`` the posterior

.. math::

    p(\theta_k \mid s) = \sum_g w_g\, \mathrm{Beta}(\theta_k \mid a_{gk}, b_{gk}),

and, for the robust population (:mod:`bayeseval.models.robust`), a two-component mixture at
each node: ``Beta(a_gk, b_gk)`` with probability ``r_gk`` (the responsibility of the main
component) and the wide component's ``Beta(a0_k, b0_k)`` otherwise. Given the node, the rates
of different strata are independent. :class:`BetaMixture` holds these arrays and computes
moments, the CDF, quantiles, draws and the moments and draws of a weighted sum of the rates.

Quantiles solve the exact mixture CDF on the logit scale (each Beta component has a smooth
log-concave density there):

1. start from the quantiles of a Beta with the exact mixture mean and variance;
2. evaluate the mixture CDF exactly (``scipy.special.betainc``) at one anchor per column, the
   start of the median;
3. carry the CDF from the anchor to the other starts by integrating the mixture density
   (15-point Gauss-Kronrod on the logit scale); where the 15-point and the embedded 7-point
   Gauss results differ by more than 1e-10, or the interval spans more than 8 logit-scale
   sds of the narrowest component (15 nodes could step over it), the CDF is evaluated with
   ``betainc`` instead;
4. Halley steps on ``F(t) - q`` with the CDF updated by 4-point (2-point for tiny steps)
   Gauss-Legendre integrals of the density over each step (steps longer than half the
   narrowest component's logit-scale sd are integrated as in 3), stopping when
   ``|F - q| < 1e-11``;
5. every CDF value is thus exact or a sum of integrals with errors of about 1e-10 or less;
   solutions the loop leaves unsolved (iteration cap, collapsed bracket) are checked with
   the exact CDF and re-solved by bisection on it where ``|F - q| > 1e-8``.

Tested against bisection on SciPy's ``betainc`` (``tests/kernels/test_mixture.py``,
``tests/models/test_exact.py``); measured accuracy: docs/validation.md, section 12b.

Columns that share their parameters (strata with the same counts) are stored once
(``column_index``) and every summary is computed once per stored column.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from scipy.special import betainc, betaincinv, betaln, expit, log_expit, logit

from bayeseval._kernels.rows import unique_rows

__all__ = ["BetaMixture", "mixture_quantiles"]


def _beta_ppf_matched(qs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Quantiles (len(qs), J) of Beta distributions with the given means and variances."""
    var = np.maximum(var, 1e-300)
    common = np.maximum(mean * (1 - mean) / var - 1.0, 1e-6)
    a = np.maximum(mean * common, 1e-8)
    b = np.maximum((1 - mean) * common, 1e-8)
    return betaincinv(a[None, :], b[None, :], np.asarray(qs, dtype=float)[:, None])


# 15-point Gauss-Kronrod rule on [-1, 1] with its embedded 7-point Gauss rule (QUADPACK qk15)
_XK = np.array(
    [0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
     0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
     0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
     0.207784955007898467600689403773245, 0.0]
)  # fmt: skip
_WK = np.array(
    [0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
     0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
     0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
     0.204432940075298892414161999234649, 0.209482141084727828012999174891714]
)  # fmt: skip
_WG = np.array(
    [0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
     0.381830050505118944950369775488975, 0.417959183673469387755102040816327]
)  # fmt: skip
_GK_NODES = np.concatenate([-_XK[:-1], _XK[::-1]])
_GK_WK = np.concatenate([_WK[:-1], _WK[::-1]])
_GK_WG = np.zeros(15)
_GK_WG[[1, 3, 5, 7, 9, 11, 13]] = np.concatenate([_WG[:-1], _WG[::-1]])
_GL = {n: np.polynomial.legendre.leggauss(n) for n in (2, 4)}
_Q_TOL = 1e-11  # |F(quantile) - q| at which the solver stops
_Q_VERIFY = 1e-8  # |F(quantile) - q| by the exact CDF above which a solution is re-solved
_GK_TOL = 1e-10  # |Kronrod - Gauss| above which the CDF is evaluated with betainc instead
_GK_SPAN = 8.0  # longest Kronrod interval, in logit-scale sds of the narrowest component
_CHUNK = 50_000  # components x columns per chunk (keeps the work arrays in cache)


class _LogitDensity:
    """Mixture of Beta components (rows) for each stratum (columns), on the logit scale."""

    def __init__(self, W: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
        self.W, self.A, self.B = W, A, B
        with np.errstate(divide="ignore"):  # a zero weight (or -1e-17 of rounding) is log 0
            self.logW = np.log(np.maximum(W, 0.0)) - betaln(A, B)
        self.AB = A + B

    def density(self, t: np.ndarray, cols: np.ndarray, slope: bool = False) -> Any:
        """Mixture density in t = logit(x) at t (N, c) for the columns ``cols`` (c,).

        With ``slope``, also its derivative in t. One node at a time, in place, so the
        (grid points x columns) buffers stay in cache.
        """
        lx = log_expit(t)
        l1x = log_expit(-t)
        A, B, logW = self.A[:, cols], self.B[:, cols], self.logW[:, cols]
        out = np.empty(t.shape)
        buf = np.empty(A.shape)
        tmp = np.empty(A.shape)
        if slope:
            d_out = np.empty(t.shape)
            AB = self.AB[:, cols]
            x = expit(t)
        for i in range(t.shape[0]):
            np.multiply(A, lx[i], out=buf)
            np.multiply(B, l1x[i], out=tmp)
            buf += tmp
            buf += logW
            np.exp(buf, out=buf)
            out[i] = buf.sum(axis=0)
            if slope:
                # d/dt [A log x + B log(1 - x)] = A - (A + B) x
                np.multiply(AB, x[i], out=tmp)
                np.subtract(A, tmp, out=tmp)
                tmp *= buf
                d_out[i] = tmp.sum(axis=0)
        return (out, d_out) if slope else out

    def cdf(self, t: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Mixture CDF at t (c,) by betainc, for the columns ``cols``."""
        x = expit(t)
        return np.einsum("gc,gc->c", self.W[:, cols], betainc(self.A[:, cols], self.B[:, cols], x[None, :]))

    def integral_gk(self, t0: np.ndarray, t1: np.ndarray, cols: np.ndarray) -> tuple:
        """Integral of the density over [t0, t1] (15-point Kronrod) and its error estimate."""
        mid, half = 0.5 * (t0 + t1), 0.5 * (t1 - t0)
        f = self.density(mid[None, :] + half[None, :] * _GK_NODES[:, None], cols)
        k = half * (_GK_WK @ f)
        g = half * (_GK_WG @ f)
        return k, np.abs(k - g)

    def carry(self, t0: np.ndarray, t1: np.ndarray, F0: np.ndarray, cols: np.ndarray, s_min: np.ndarray) -> np.ndarray:
        """CDF at t1 from its value F0 at t0: Kronrod integral, or betainc where unsure.

        Unsure: the error estimate exceeds ``_GK_TOL``, or the interval spans more than
        ``_GK_SPAN`` logit-scale sds of the narrowest component (``s_min``, per column), where
        15 nodes could step over a narrow component altogether.
        """
        out = np.empty(t0.size)
        near = np.abs(t1 - t0) <= _GK_SPAN * s_min[cols]
        bad = ~near
        if near.any():
            k, err = self.integral_gk(t0[near], t1[near], cols[near])
            out[near] = F0[near] + k
            bad[near] = ~(err <= _GK_TOL)
        if bad.any():
            out[bad] = self.cdf(t1[bad], cols[bad])
        return out

    def integral_gl(self, t0: np.ndarray, t1: np.ndarray, cols: np.ndarray, n: int = 4) -> np.ndarray:
        """Integral of the density over [t0, t1] by n-point Gauss-Legendre (short steps)."""
        nodes, weights = _GL[n]
        mid, half = 0.5 * (t0 + t1), 0.5 * (t1 - t0)
        f = self.density(mid[None, :] + half[None, :] * nodes[:, None], cols)
        return half * (weights @ f)


def mixture_quantiles(qs: np.ndarray, W: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Quantiles (len(qs), J) of per-column mixtures ``sum_g W[g] Beta(A[g], B[g])``.

    The algorithm is described in the module docstring.
    """
    mix = _LogitDensity(W, A, B)
    J = A.shape[1]
    Q = len(qs)
    mean = np.einsum("gj,gj->j", W, A / mix.AB)
    m2 = np.einsum("gj,gj->j", W, A * (A + 1.0) / (mix.AB * (mix.AB + 1.0)))
    var = np.maximum(m2 - mean**2, 1e-300)
    with np.errstate(all="ignore"):
        start = _beta_ppf_matched(np.r_[0.5, qs], mean, var)
        t_start = np.clip(logit(np.clip(start, 1e-300, 1.0)), -700.0, 700.0)
        t_start = np.where(np.isfinite(t_start), t_start, 0.0)
    # narrowest component on the logit scale (sd of the logit of Beta(A, B) ~ sqrt(1/A + 1/B))
    # among those with weight >= 1e-10 (lighter ones move a CDF by at most their weight)
    s_min = np.sqrt(np.min(np.where(W >= 1e-10, 1.0 / A + 1.0 / B, np.inf), axis=0))
    all_cols = np.arange(J)
    anchor_t = t_start[0]
    anchor_F = mix.cdf(anchor_t, all_cols)
    # flattened state over (quantile, stratum)
    cols = np.tile(all_cols, Q)
    target = np.repeat(qs, J)
    t = t_start[1:].ravel().copy()
    F = np.tile(anchor_F, Q)
    move = t != np.tile(anchor_t, Q)
    if move.any():
        F[move] = mix.carry(np.tile(anchor_t, Q)[move], t[move], F[move], cols[move], s_min)
    lo = np.full(t.size, -np.inf)
    hi = np.full(t.size, np.inf)
    active = np.flatnonzero(np.abs(F - target) >= _Q_TOL)
    for _ in range(100):
        if active.size == 0:
            break
        ta, ca, d = t[active], cols[active], F[active] - target[active]
        lo[active] = np.where(d < 0, ta, lo[active])
        hi[active] = np.where(d > 0, ta, hi[active])
        f, df = mix.density(ta[None, :], ca, slope=True)
        f, df = f[0], df[0]
        with np.errstate(all="ignore"):
            newton = d / f
            halley = newton / (1.0 - 0.5 * newton * df / f)
            h = np.where(np.isfinite(halley) & (np.abs(halley) < 2 * np.abs(newton)), halley, newton)
        h = -np.clip(np.nan_to_num(h, nan=0.0, posinf=5.0, neginf=-5.0), -5.0, 5.0)
        la, ha = lo[active], hi[active]
        tn = ta + h
        outside = (tn <= la) | (tn >= ha) | (h == 0)
        both = np.isfinite(la) & np.isfinite(ha)
        tn = np.where(outside & both, 0.5 * (la + ha), tn)
        tn = np.where(outside & ~both & np.isfinite(la), np.maximum(tn, la + 1.0), tn)
        tn = np.where(outside & ~both & np.isfinite(ha), np.minimum(tn, ha - 1.0), tn)
        # steps within half the narrowest component's sd: Gauss-Legendre (2 points for the
        # last, tiny steps; error ~ (h / sd)^5 / 4320, resp. ~ 2e-8 (h / sd)^9); longer steps
        # as the starts (Kronrod, or betainc where unsure)
        rel = np.abs(tn - ta) / s_min[ca]
        Fn = np.empty(active.size)
        for sel, n in ((rel <= 0.02, 2), ((rel > 0.02) & (rel <= 0.5), 4)):
            if sel.any():
                Fn[sel] = F[active[sel]] + mix.integral_gl(ta[sel], tn[sel], ca[sel], n)
        big = rel > 0.5
        if big.any():
            Fn[big] = mix.carry(ta[big], tn[big], F[active[big]], ca[big], s_min)
        t[active], F[active] = tn, Fn
        stuck = np.isfinite(lo[active]) & np.isfinite(hi[active])
        stuck &= hi[active] - lo[active] < 1e-13 * np.maximum(1.0, np.abs(tn))
        active = active[(np.abs(Fn - target[active]) >= _Q_TOL) & ~stuck]
    # Every CDF value above is exact (betainc) or a sum of integrals with small errors (each
    # Kronrod carry within _GK_TOL over a resolved interval; Gauss-Legendre steps within half
    # the narrowest sd). Solutions the loop left unsolved (iteration cap, or a bracket that
    # collapsed) are checked with the exact CDF and re-solved by bisection where off.
    with np.errstate(all="ignore"):
        check = np.flatnonzero(~(np.abs(F - target) < _Q_TOL))
    if check.size:
        with np.errstate(all="ignore"):
            F_exact = mix.cdf(t[check], cols[check])
        bad = check[~(np.abs(F_exact - target[check]) <= _Q_VERIFY)]
        if bad.size:
            t[bad] = _bisect_quantiles(mix, target[bad], cols[bad])
    return expit(t).reshape(Q, J)


def _bisect_quantiles(mix: Any, target: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Logit-scale quantiles by bisection on the exact mixture CDF (slow, always right)."""
    lo = np.full(target.size, -745.0)
    hi = np.full(target.size, 745.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        with np.errstate(all="ignore"):
            below = mix.cdf(mid, cols) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
        if np.all(hi - lo <= 1e-12 * np.maximum(1.0, np.abs(mid))):
            break
    return 0.5 * (lo + hi)


class _Wide(NamedTuple):
    """The wide component of a robust mixture, per stored column."""

    resp: np.ndarray  # probability of the (a, b) component at each node, shape (G, J)
    a: np.ndarray  # the wide component's Beta parameters, shape (J,)
    b: np.ndarray


class BetaMixture:
    """Per-column mixtures of Beta distributions sharing the weights of hyper-grid nodes.

    Column ``k`` (a stratum, or a distinct ``(successes, trials)`` pair) has the distribution
    ``sum_g weights[g] * [resp[g, k] Beta(a[g, k], b[g, k]) + (1 - resp[g, k])
    Beta(a_wide[k], b_wide[k])]``; without ``resp`` the wide component is absent. Given the
    node ``g`` the columns are independent.

    Parameters
    ----------
    weights : array-like, shape (G,)
        Non-negative node weights (normalised to sum 1).
    a, b : array-like, shape (G, K)
        Beta parameters of each column at each node (positive).
    resp : array-like, shape (G, K), optional
        Probability of the ``(a, b)`` component at each node (robust population).
    a_wide, b_wide : array-like, shape (K,), optional
        The other component's Beta parameters (required with ``resp``).
    column_index : array-like of int, optional
        Column ``k`` of the mixture is stored column ``column_index[k]`` of ``a``, ``b``,
        ``resp``, ``a_wide`` and ``b_wide`` (strata with the same counts share one stored
        column; the distribution's summaries are computed once per stored column). Default:
        the stored columns themselves.

    Examples
    --------
    >>> mix = BetaMixture([0.5, 0.5], [[2.0], [4.0]], [[8.0], [6.0]])
    >>> round(float(mix.mean()[0]), 6)
    0.3
    """

    def __init__(
        self,
        weights: Any,
        a: Any,
        b: Any,
        *,
        resp: Any = None,
        a_wide: Any = None,
        b_wide: Any = None,
        column_index: Any = None,
    ) -> None:
        w = np.asarray(weights, dtype=float).ravel()
        a = np.atleast_2d(np.asarray(a, dtype=float))
        b = np.atleast_2d(np.asarray(b, dtype=float))
        if a.shape != b.shape or a.shape[0] != w.size:
            raise ValueError(f"a and b must have shape (len(weights), K) = ({w.size}, K), got {a.shape} and {b.shape}")
        if not (np.all(w >= 0) and w.sum() > 0):
            raise ValueError(f"weights must be non-negative with a positive sum, got {w[:5].tolist()}")
        if resp is not None and (a_wide is None or b_wide is None):
            raise ValueError("resp needs a_wide and b_wide (the wide component's Beta parameters)")
        self.weights = w / w.sum()
        self._a, self._b = a, b
        self._wide: _Wide | None = None
        if resp is not None:
            self._wide = _Wide(
                np.broadcast_to(np.asarray(resp, dtype=float), a.shape),
                np.broadcast_to(np.asarray(a_wide, float), a.shape[1:]),
                np.broadcast_to(np.asarray(b_wide, float), a.shape[1:]),
            )
        self._map: np.ndarray | None = None
        if column_index is not None:
            idx = np.asarray(column_index, dtype=np.intp).ravel()
            if idx.size and (idx.min() < 0 or idx.max() >= a.shape[1]):
                raise ValueError(
                    f"column_index must lie in [0, {a.shape[1]}), got values from {idx.min()} to {idx.max()}"
                )
            self._map = idx
        self._full: dict[str, np.ndarray] = {}

    @classmethod
    def single(cls, a: Any, b: Any) -> BetaMixture:
        """One Beta per column (a one-node mixture).

        Examples
        --------
        >>> BetaMixture.single([1.0, 3.0], [1.0, 1.0]).mean().tolist()
        [0.5, 0.75]
        """
        return cls(np.ones(1), np.asarray(a, dtype=float)[None, :], np.asarray(b, dtype=float)[None, :])

    @property
    def n_columns(self) -> int:
        """Number of columns (strata)."""
        return self._a.shape[1] if self._map is None else self._map.size

    @property
    def n_distinct(self) -> int:
        """Number of stored (distinct) columns the columns map onto."""
        return self._a.shape[1]

    # the (G, K) arrays over all columns, built on first use only (columns share storage)
    def _expand(self, name: str, arr: np.ndarray) -> np.ndarray:
        if self._map is None:
            return arr
        if name not in self._full:
            self._full[name] = arr[..., self._map]
        return self._full[name]

    @property
    def a(self) -> np.ndarray:
        """Beta parameter ``a`` of each column at each node, shape (G, K)."""
        return self._expand("a", self._a)

    @property
    def b(self) -> np.ndarray:
        """Beta parameter ``b`` of each column at each node, shape (G, K)."""
        return self._expand("b", self._b)

    @property
    def resp(self) -> np.ndarray | None:
        """Probability of the ``(a, b)`` component at each node, shape (G, K), or None."""
        return None if self._wide is None else self._expand("resp", self._wide.resp)

    @property
    def a_wide(self) -> np.ndarray | None:
        """The wide component's ``a`` per column, shape (K,), or None."""
        return None if self._wide is None else self._expand("a_wide", self._wide.a)

    @property
    def b_wide(self) -> np.ndarray | None:
        """The wide component's ``b`` per column, shape (K,), or None."""
        return None if self._wide is None else self._expand("b_wide", self._wide.b)

    def _spread(self, values: np.ndarray) -> np.ndarray:
        """Values per stored column (last axis) -> values per column."""
        return values if self._map is None else values[..., self._map]

    def _wide_kw(self, used: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The constructor's ``resp``, ``a_wide``, ``b_wide`` (of the stored columns ``used``)."""
        if self._wide is None:
            return {}
        r, aw, bw = self._wide
        if used is None:
            return {"resp": r, "a_wide": aw, "b_wide": bw}
        return {"resp": r[:, used], "a_wide": aw[used], "b_wide": bw[used]}

    def _stored(self, **kw: Any) -> BetaMixture:
        return BetaMixture(self.weights, self._a, self._b, **self._wide_kw(), **kw)

    def columns(self, idx: Any) -> BetaMixture:
        """The mixture of the columns ``idx`` (same nodes and weights).

        The result shares the stored arrays: repeated columns (strata with the same counts)
        cost nothing and moments, CDFs and quantiles are computed once per distinct column.

        Examples
        --------
        >>> BetaMixture.single([1.0, 3.0], [1.0, 1.0]).columns([1, 1, 0]).mean().tolist()
        [0.75, 0.75, 0.5]
        """
        idx = np.asarray(idx, dtype=np.intp).ravel()
        if idx.size and (idx.min() < -self.n_columns or idx.max() >= self.n_columns):
            raise ValueError(f"idx must lie in [0, {self.n_columns}), got {idx.min()} to {idx.max()}")
        idx = np.where(idx < 0, idx + self.n_columns, idx)
        return self._stored(column_index=idx if self._map is None else self._map[idx])

    def with_independent(self, positions: Any, a: Any, b: Any) -> BetaMixture:
        """Columns ``positions`` of a larger mixture are these; the others independent Betas.

        The result has ``len(positions) + len(a)`` columns: column ``positions[i]`` is column
        ``i`` of this mixture, and the remaining columns (in order) are ``Beta(a[j], b[j])``
        whatever the node (the wide component with probability one). Repeated ``(a, b)``
        pairs are stored once.

        Examples
        --------
        >>> mix = BetaMixture.single([2.0], [3.0]).with_independent([1], [1.0, 1.0], [1.0, 1.0])
        >>> mix.mean().round(3).tolist()
        [0.5, 0.4, 0.5]
        """
        pos = np.asarray(positions, dtype=np.intp).ravel()
        a = np.asarray(a, dtype=float).ravel()
        b = np.asarray(b, dtype=float).ravel()
        k = pos.size + a.size
        if pos.size != self.n_columns or a.shape != b.shape:
            raise ValueError(
                f"positions must have one entry per column ({self.n_columns}) and a, b the same "
                f"shape, got {pos.size}, {a.shape} and {b.shape}"
            )
        G, J = self._a.shape
        pairs, inv, _ = unique_rows(a, b)
        U = pairs.shape[0]
        resp, aw, bw = (np.ones((G, J)), np.ones(J), np.ones(J)) if self._wide is None else self._wide
        idx = np.empty(k, dtype=np.intp)
        others = np.ones(k, bool)
        others[pos] = False
        idx[pos] = np.arange(self.n_columns) if self._map is None else self._map
        idx[others] = J + inv.ravel()
        return BetaMixture(
            self.weights,
            np.hstack([self._a, np.ones((G, U))]),
            np.hstack([self._b, np.ones((G, U))]),
            resp=np.hstack([resp, np.zeros((G, U))]),
            a_wide=np.r_[aw, pairs[:, 0]],
            b_wide=np.r_[bw, pairs[:, 1]],
            column_index=idx,
        )

    def _used(self) -> tuple[BetaMixture, np.ndarray | None]:
        """The mixture of the stored columns that some column uses, and the column map onto it."""
        if self._map is None:
            return self, None
        used, inv = np.unique(self._map, return_inverse=True)
        if used.size == self._a.shape[1]:
            return self._stored(), self._map
        sub = BetaMixture(self.weights, self._a[:, used], self._b[:, used], **self._wide_kw(used))
        return sub, inv.ravel()

    # -- moments -------------------------------------------------------------------------
    def _stored_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of each stored column given each node, shape (G, J)."""
        tot = self._a + self._b
        m = self._a / tot
        if self._wide is None:
            return m, m * (1.0 - m) / (tot + 1.0)
        r, aw, bw = self._wide
        ex2 = m * (self._a + 1.0) / (tot + 1.0)
        tw = aw + bw
        m0 = aw / tw
        ex2_0 = m0 * (aw + 1.0) / (tw + 1.0)
        mean = r * m + (1.0 - r) * m0
        second = r * ex2 + (1.0 - r) * ex2_0
        return mean, np.maximum(second - mean * mean, 0.0)

    def _compact_for_moments(self) -> tuple[BetaMixture, np.ndarray | None]:
        # all stored columns unless most of them are unused
        if self._map is not None and self._a.shape[1] > 2 * self._map.size:
            return self._used()
        return self._stored(), self._map

    def _mean_var(self) -> tuple[np.ndarray, np.ndarray]:
        mix, idx = self._compact_for_moments()
        m, v = mix._stored_moments()
        mean = self.weights @ m
        var = np.maximum(self.weights @ (v + m * m) - mean * mean, 1e-300)
        return (mean, var) if idx is None else (mean[idx], var[idx])

    def mean(self) -> np.ndarray:
        """Mean of each column, shape (K,)."""
        return self._mean_var()[0]

    def var(self) -> np.ndarray:
        """Variance of each column (law of total variance over the nodes), shape (K,)."""
        return self._mean_var()[1]

    def weighted_moments(self, weights: Any) -> tuple[float, float]:
        """Mean and variance of the weighted sum ``sum_k weights[k] theta_k`` (exact).

        Given the node the columns are independent, so the conditional mean is
        ``sum_k weights_k m_gk`` and the conditional variance ``sum_k weights_k^2 v_gk``;
        the law of total variance over the nodes gives the result. Use
        :meth:`weighted_draws` for draws of the same quantity.

        Examples
        --------
        >>> mix = BetaMixture.single([2.0, 6.0], [8.0, 4.0])
        >>> m, v = mix.weighted_moments([0.5, 0.5])
        >>> round(m, 6), round(v, 6)
        (0.4, 0.009091)
        """
        w = self._weight_vector(weights)
        mix, idx = self._compact_for_moments()
        m, v = mix._stored_moments()
        if idx is None:
            w1, w2 = w, w * w
        else:  # columns sharing a stored column add their weights
            w1 = np.bincount(idx, weights=w, minlength=m.shape[1])
            w2 = np.bincount(idx, weights=w * w, minlength=m.shape[1])
        cond_mean = m @ w1
        mean = float(self.weights @ cond_mean)
        var = float(self.weights @ (v @ w2 + cond_mean**2) - mean**2)
        return mean, max(var, 1e-300)

    def _weight_vector(self, weights: Any) -> np.ndarray:
        w = np.asarray(weights, dtype=float).ravel()
        if w.shape != (self.n_columns,):
            raise ValueError(f"weights must have one value per column ({self.n_columns}), got shape {w.shape}")
        return w

    # -- distribution ----------------------------------------------------------------------
    def _stored_stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        W = np.broadcast_to(self.weights[:, None], self._a.shape)
        if self._wide is None:
            return W, self._a, self._b
        r, aw, bw = self._wide
        wide = 1.0 - self.weights @ r
        return (
            np.vstack([W * r, wide[None, :]]),
            np.vstack([self._a, aw[None, :]]),
            np.vstack([self._b, bw[None, :]]),
        )

    def stacked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """All components as weight, A, B arrays (G', K); the wide component is one row."""
        W, A, B = self._stored_stacked()
        return self._spread(W), self._spread(A), self._spread(B)

    def cdf(self, x: Any) -> np.ndarray:
        """``P(theta_k <= x_k)`` for each column (x scalar or one value per column).

        Examples
        --------
        >>> BetaMixture.single([1.0], [1.0]).cdf(0.25).tolist()
        [0.25]
        """
        x = np.clip(np.broadcast_to(np.asarray(x, dtype=float), (self.n_columns,)), 0.0, 1.0)
        mix, idx = self._used()
        if idx is not None and x.size and np.all(x == x[0]):  # one x: once per stored column
            return mix.cdf(x[: mix.n_columns])[idx]
        W, A, B = mix._stored_stacked()
        cols = np.arange(mix.n_columns) if idx is None else idx
        out = np.empty(x.size)
        step = max(1, _CHUNK // W.shape[0])
        for i in range(0, x.size, step):
            c = cols[i : i + step]
            out[i : i + step] = np.einsum("gk,gk->k", W[:, c], betainc(A[:, c], B[:, c], x[None, i : i + step]))
        return np.clip(out, 0.0, 1.0)

    def quantiles(self, q: Any) -> np.ndarray:
        """Quantiles of each column, shape (len(q), K) (or (K,) for a scalar ``q``).

        Solves the exact mixture CDF (see the module docstring) to about 1e-9 in probability,
        once per distinct stored column.

        Examples
        --------
        >>> BetaMixture.single([2.0], [3.0]).quantiles(0.5).round(6).tolist()
        [0.385728]
        """
        scalar = np.ndim(q) == 0
        qs = np.atleast_1d(np.asarray(q, dtype=float))
        if qs.ndim != 1 or np.any(~((qs > 0) & (qs < 1))):
            raise ValueError(f"q must be strictly between 0 and 1, got {qs.tolist()}")
        mix, idx = self._used()
        W, A, B = mix._stored_stacked()
        if W.shape[0] == 1:
            out = betaincinv(A, B, qs[:, None])
        else:
            out = np.empty((len(qs), mix.n_columns))
            # memory: 15 Kronrod nodes x components x columns in a chunk
            step = max(1, _CHUNK // W.shape[0])
            for i in range(0, mix.n_columns, step):
                sl = slice(i, i + step)
                out[:, sl] = mixture_quantiles(qs, W[:, sl], A[:, sl], B[:, sl])
        if idx is not None:
            out = out[:, idx]
        return out[0] if scalar else out

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Equal-tailed interval of each column at ``level`` (0.95 = 95%).

        Examples
        --------
        >>> lo, hi = BetaMixture.single([5.0], [36.0]).interval(0.9)
        >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
        (0.0506, 0.2144)
        """
        half = (1.0 - level) / 2.0
        q = self.quantiles([half, 1.0 - half])
        return q[0], q[1]

    def outlier_probability(self) -> np.ndarray:
        """Probability of the wide component per column (zeros without ``resp``)."""
        if self._wide is None:
            return np.zeros(self.n_columns)
        return self._spread(1.0 - self.weights @ self._wide.resp)

    # -- draws -----------------------------------------------------------------------------
    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Joint draws of the columns, shape (size, K): a node, then a component, then Beta.

        Examples
        --------
        >>> mix = BetaMixture.single([2.0], [3.0])
        >>> mix.sample(4, np.random.default_rng(0)).shape
        (4, 1)
        """
        g = rng.choice(self.weights.size, size=size, p=self.weights)
        a, b = self._spread(self._a[g]), self._spread(self._b[g])
        if self._wide is not None:
            r, aw, bw = self._wide
            wide = rng.random(a.shape) >= self._spread(r[g])
            a = np.where(wide, self._spread(aw)[None, :], a)
            b = np.where(wide, self._spread(bw)[None, :], b)
        return rng.beta(a, b)

    def weighted_draws(self, weights: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draws of the weighted sum ``sum_k weights[k] theta_k``, shape (size,).

        The draws of what :meth:`weighted_moments` computes exactly.

        Examples
        --------
        >>> mix = BetaMixture.single([2.0, 6.0], [8.0, 4.0])
        >>> mix.weighted_draws([0.5, 0.5], 3, np.random.default_rng(0)).shape
        (3,)
        """
        return self.sample(size, rng) @ self._weight_vector(weights)
