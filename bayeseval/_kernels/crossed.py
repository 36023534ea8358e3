r"""Integrated nested Laplace approximation of the crossed-factor logit-normal model.

The model (the PyMC engine's ``model="logit_normal"`` with ``factors=`` and ``interaction=``):

.. math::

    s_c \sim \mathrm{Bin}(n_c, \theta_c), \quad
    \operatorname{logit}\theta_c = \alpha + \sum_f \beta_f[\ell_f(c)] + \gamma_c,

with ``alpha ~ N(0, 1.5^2)``, each factor's effects ``beta_f = sigma_f z_f`` where ``z_f`` is a
zero-sum standard normal vector (``pymc.ZeroSumNormal``: ``N(0, I)`` restricted to the vectors
that sum to zero), the interaction ``gamma_c ~ N(0, sigma^2)`` and half-normal(1) priors on
``sigma_f`` and ``sigma``. A zero-sum vector of ``L`` levels is written ``Q w`` with ``Q`` an
orthonormal basis of the zero-sum subspace and ``w ~ N(0, sigma_f^2 I_{L-1})``, so the latent
field ``x = (alpha, w_1, ..., w_F, gamma)`` is Gaussian given the log standard deviations
``h = (log sigma_1, ..., log sigma_F, log sigma)``.

The approximation (Rue, Martino and Chopin 2009, "Approximate Bayesian inference for latent
Gaussian models by using integrated nested Laplace approximations", JRSS B 71(2)):

1. For each ``h``, Newton's method finds the mode of ``p(x | s, h)`` and the Laplace
   approximation gives ``log p(s | h)`` (all grid points in one batch).
2. The mode of ``p(h | s)`` and the Hessian there define standardised directions; a grid of
   step ``dz`` along them is explored until the log density drops by ``drop`` (INLA's "grid"
   strategy), and each point is weighted by its Laplace posterior density. Defaults
   ``dz = 1.25``, ``drop = 6`` (INLA's default drop; its default step is 0.75); their
   measured accuracy: docs/validation.md, section 12e.
3. Each cell's marginal of ``eta_c = logit theta_c`` is a mixture over the grid of its
   Gaussian marginal, corrected for the cell's own binomial likelihood: the Gaussian
   likelihood term of the cell is replaced by the exact one (the cavity-times-likelihood
   "tilted" density, evaluated by quadrature on a fine grid of ``eta``). This removes most of
   the skew a Gaussian misses for cells with few trials or rates near 0 or 1.

Cells without trials have no likelihood term: their marginal is the prediction from the
intercept, the factor effects and a fresh interaction draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

__all__ = ["CrossedDesign", "CrossedApproximation", "fit_crossed_laplace", "INTERCEPT_SD"]

#: prior standard deviation of the intercept (as in the PyMC logit-normal model)
INTERCEPT_SD = 1.5
#: scale of the half-normal priors of the standard deviations
SIGMA_SCALE = 1.0
#: points of the eta grid on which each cell marginal is tabulated
ETA_POINTS = 101

#: a latent field ``(b, gamma)``: where the inner Newton fits start
_Latent = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class CrossedDesign:
    """The linear map from the latent field to the cell logits.

    The latent field is ``x = (b, gamma)``: ``b`` holds the intercept and the factors'
    zero-sum coordinates, ``gamma`` the per-cell interaction (absent without it), and
    ``eta = fixed @ b + gamma``.

    Parameters
    ----------
    fixed : numpy.ndarray
        ``(C, q)`` design of ``b``.
    blocks : list of tuple
        ``(name, start, stop)`` of the intercept and of each factor's block of ``b``.
    sd_names : list of str
        Names of the standard deviations in ``h`` (the factor names, then ``"sigma"`` when the
        interaction is in the model).
    interaction : bool
        Whether ``gamma`` is in the model.
    """

    fixed: np.ndarray
    blocks: list
    sd_names: list
    interaction: bool

    def prior_precision(self, log_sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prior precisions of ``b`` ``(G, q)`` and of each ``gamma_c`` ``(G,)``."""
        log_sd = np.atleast_2d(log_sd)
        d_b = np.empty((log_sd.shape[0], self.fixed.shape[1]))
        d_b[:, 0] = 1.0 / INTERCEPT_SD**2
        for j, (_, start, stop) in enumerate(self.blocks[1:]):
            d_b[:, start:stop] = np.exp(-2.0 * log_sd[:, j])[:, None]
        d_g = np.exp(-2.0 * log_sd[:, -1]) if self.interaction else np.zeros(log_sd.shape[0])
        return d_b, d_g


def zero_sum_basis(n_levels: int) -> np.ndarray:
    """Orthonormal basis ``(L, L - 1)`` of the vectors of length ``L`` summing to zero.

    Parameters
    ----------
    n_levels : int
        Number of levels ``L``.

    Returns
    -------
    numpy.ndarray
        Normalised Helmert contrasts: column ``j`` contrasts level ``j + 1`` with levels
        ``0..j``.
    """
    basis = np.zeros((n_levels, max(n_levels - 1, 0)))
    for j in range(1, n_levels):
        basis[:j, j - 1] = 1.0
        basis[j, j - 1] = -float(j)
        basis[:, j - 1] /= np.sqrt(j * (j + 1.0))
    return basis


def build_design(codes: list, n_levels: list, names: list, interaction: bool) -> CrossedDesign:
    """Design of the crossed model from each factor's level codes per cell.

    Parameters
    ----------
    codes : list of numpy.ndarray
        Per factor, the level index (0..L-1) of each cell.
    n_levels : list of int
        Number of levels per factor.
    names : list of str
        Factor names.
    interaction : bool
        Include the per-cell interaction ``gamma``.

    Returns
    -------
    CrossedDesign
        The design.
    """
    n_cells = len(codes[0])
    columns = [np.ones((n_cells, 1))]
    blocks = [("intercept", 0, 1)]
    start = 1
    for name, code, levels in zip(names, codes, n_levels, strict=True):
        basis = zero_sum_basis(levels)
        columns.append(basis[np.asarray(code)])
        blocks.append((str(name), start, start + basis.shape[1]))
        start += basis.shape[1]
    sd_names = [str(nm) for nm in names] + (["sigma"] if interaction else [])
    return CrossedDesign(np.hstack(columns), blocks, sd_names, bool(interaction))


# -- inner Laplace approximation ------------------------------------------------------------
def _binomial_loglik(eta: np.ndarray, s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Binomial log likelihood (without the constant) per cell, ``s eta - n log(1 + e^eta)``."""
    return s * eta - n * np.logaddexp(0.0, eta)


@dataclass
class _Field:
    """Modes and curvature of ``p(x | s, h)`` at a batch of ``h`` (see :func:`inner_modes`)."""

    b: np.ndarray  # (G, q) modes of b
    gamma: np.ndarray  # (G, C) modes of gamma (zeros without interaction)
    schur: np.ndarray  # (G, q, q) precision of b (gamma integrated out)
    diag: np.ndarray  # (G, C) conditional precision of gamma given b (W + d_g)
    site: np.ndarray  # (G, C) likelihood curvature W at the mode
    log_marginal: np.ndarray  # (G,) Laplace approximation of log p(s | h)

    def eta_moments(self, fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance ``(G, C)`` of each cell's eta under the Gaussian approximation."""
        mean = self.b @ fixed.T + self.gamma
        inv = np.linalg.inv(self.schur)
        quad = np.sum((fixed[None] @ inv) * fixed[None], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(self.diag > 0, self.site / self.diag, 0.0)
            own = np.where(self.diag > 0, 1.0 / self.diag, 0.0)
        return mean, (1.0 - ratio) ** 2 * quad + own


def _newton_step(
    b: np.ndarray,
    gamma: np.ndarray,
    eta: np.ndarray,
    design: CrossedDesign,
    d_b: np.ndarray,
    d_g: np.ndarray,
    s: np.ndarray,
    n: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Newton direction for ``(b, gamma)``; gamma is eliminated by its diagonal block."""
    B = design.fixed
    prob = special.expit(eta)
    W = n * prob * (1.0 - prob)
    resid = s - n * prob
    grad_b = resid @ B - d_b * b
    if design.interaction:
        grad_g = resid - d_g[:, None] * gamma
        D = W + d_g[:, None]
        schur = (B.T[None] * (W * d_g[:, None] / D)[:, None, :]) @ B
        rhs = grad_b - (W / D * grad_g) @ B
    else:
        D = np.zeros_like(W)
        schur = (B.T[None] * W[:, None, :]) @ B
        rhs = grad_b
    idx = np.arange(B.shape[1])
    schur[:, idx, idx] += d_b
    step_b = np.linalg.solve(schur, rhs[..., None])[..., 0]
    step_g = (grad_g - W * (step_b @ B.T)) / D if design.interaction else np.zeros_like(gamma)
    return step_b, step_g, schur, D, W


def _objective(
    b: np.ndarray,
    gamma: np.ndarray,
    design: CrossedDesign,
    d_b: np.ndarray,
    d_g: np.ndarray,
    s: np.ndarray,
    n: np.ndarray,
) -> np.ndarray:
    eta = b @ design.fixed.T + gamma
    return (
        _binomial_loglik(eta, s, n).sum(axis=-1)
        - 0.5 * np.sum(d_b * b * b, axis=-1)
        - 0.5 * d_g * np.sum(gamma * gamma, axis=-1)
    )


def inner_modes(
    log_sd: np.ndarray,
    design: CrossedDesign,
    s: np.ndarray,
    n: np.ndarray,
    start: _Latent | None = None,
    *,
    tol: float = 1e-8,
    max_iter: int = 50,
) -> _Field:
    """Modes of ``p(x | s, h)`` and the Laplace log marginal likelihood, batched over ``h``.

    Newton's method with step halving (the log posterior of ``x`` is concave). The
    interaction block of the Hessian is diagonal, so it is eliminated (Schur complement) and
    each step costs ``O(C q^2)`` per grid point instead of ``O((C + q)^3)``.

    Parameters
    ----------
    log_sd : numpy.ndarray
        ``(G, m)`` log standard deviations.
    design : CrossedDesign
        The model's design.
    s, n : numpy.ndarray
        Successes and trials per cell.
    start : tuple of numpy.ndarray, optional
        Starting ``(b, gamma)`` (zeros by default).
    tol : float
        Convergence tolerance on the largest Newton step.
    max_iter : int
        Iteration limit.

    Returns
    -------
    _Field
        Modes, curvature and the Laplace approximation of ``log p(s | h)`` (up to a constant).
    """
    log_sd = np.atleast_2d(log_sd)
    G, C, q = log_sd.shape[0], design.fixed.shape[0], design.fixed.shape[1]
    d_b, d_g = design.prior_precision(log_sd)
    if start is None:
        b, gamma = np.zeros((G, q)), np.zeros((G, C))
    else:
        b = np.broadcast_to(start[0], (G, q)).copy()
        gamma = np.broadcast_to(start[1], (G, C)).copy()
    value = _objective(b, gamma, design, d_b, d_g, s, n)
    for _ in range(max_iter):
        eta = b @ design.fixed.T + gamma
        step_b, step_g, schur, D, W = _newton_step(b, gamma, eta, design, d_b, d_g, s, n)
        t = np.ones(G)
        for _ in range(40):  # keep only ascents (concave objective)
            new_b, new_g = b + t[:, None] * step_b, gamma + t[:, None] * step_g
            new_value = _objective(new_b, new_g, design, d_b, d_g, s, n)
            bad = new_value < value - 1e-10 * (1.0 + np.abs(value))
            if not bad.any():
                break
            t = np.where(bad, t / 2.0, t)
        b, gamma, value = new_b, new_g, new_value
        size = max(np.max(np.abs(t[:, None] * step_b)), np.max(np.abs(t[:, None] * step_g)))
        if size < tol:
            break
    eta = b @ design.fixed.T + gamma
    _, _, schur, D, W = _newton_step(b, gamma, eta, design, d_b, d_g, s, n)
    log_det = np.linalg.slogdet(schur)[1]
    log_prior_norm = 0.5 * np.sum(np.log(d_b), axis=-1)
    if design.interaction:
        log_det = log_det + np.sum(np.log(D), axis=-1)
        log_prior_norm = log_prior_norm + 0.5 * C * np.log(d_g)
    log_marginal = value + log_prior_norm - 0.5 * log_det
    return _Field(b, gamma, schur, D, W, log_marginal)


def log_sd_prior(log_sd: np.ndarray) -> np.ndarray:
    """Log density of ``h = log sigma`` under half-normal(1) priors on each ``sigma``."""
    sd = np.exp(log_sd)
    return np.sum(np.log(2.0 / np.sqrt(2.0 * np.pi) / SIGMA_SCALE) - 0.5 * (sd / SIGMA_SCALE) ** 2 + log_sd, axis=-1)


# -- outer integration over the standard deviations ------------------------------------------
def _log_post_h(
    log_sd: np.ndarray, design: CrossedDesign, s: np.ndarray, n: np.ndarray, start: _Latent | None = None
) -> tuple[_Field, np.ndarray]:
    field = inner_modes(log_sd, design, s, n, start)
    return field, field.log_marginal + log_sd_prior(log_sd)


def _hyper_mode(design: CrossedDesign, s: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, _Latent | None]:
    """Mode of the Laplace approximation of ``p(h | s)``.

    L-BFGS-B on ``-log p(h | s)``; each evaluation computes the value and a central
    finite-difference gradient in one batch of inner Newton fits, warm-started at the last
    latent mode.
    """
    m = len(design.sd_names)
    eps = 1e-4
    offsets = np.vstack([np.zeros(m), np.eye(m) * eps, -np.eye(m) * eps])
    cache: dict[str, _Latent | None] = {"x": None}

    def neg(h: np.ndarray) -> tuple[float, np.ndarray]:
        field, lp = _log_post_h(h[None, :] + offsets, design, s, n, cache["x"])
        cache["x"] = (field.b[0], field.gamma[0])
        grad = (lp[1 : m + 1] - lp[m + 1 :]) / (2.0 * eps)
        return -float(lp[0]), -grad

    res = optimize.minimize(neg, np.full(m, -1.0), jac=True, method="L-BFGS-B", bounds=[(-12.0, 4.0)] * m)
    neg(res.x)
    return res.x, cache["x"]


def _hessian(
    h0: np.ndarray, design: CrossedDesign, s: np.ndarray, n: np.ndarray, x0: _Latent | None, step: float = 0.1
) -> np.ndarray:
    """Negative Hessian of ``log p(h | s)`` at ``h0`` by central differences (one batch)."""
    m = len(h0)
    eye = np.eye(m) * step
    points = [h0]
    for i in range(m):
        points += [h0 + eye[i], h0 - eye[i]]
        for j in range(i + 1, m):
            points += [h0 + eye[i] + eye[j], h0 + eye[i] - eye[j], h0 - eye[i] + eye[j], h0 - eye[i] - eye[j]]
    lp = _log_post_h(np.array(points), design, s, n, x0)[1]
    f0, k, H = lp[0], 1, np.zeros((m, m))
    for i in range(m):
        H[i, i] = (lp[k] - 2 * f0 + lp[k + 1]) / step**2
        k += 2
        for j in range(i + 1, m):
            pp, pm, mp, mm = lp[k : k + 4]
            H[i, j] = H[j, i] = (pp - pm - mp + mm) / (4 * step**2)
            k += 4
    return -H


def _axis_range(lp_axis: np.ndarray, f0: float, drop: float) -> tuple[int, int]:
    """First and last index of the run around the centre whose log density is within ``drop``."""
    centre = len(lp_axis) // 2
    inside = f0 - lp_axis < drop
    lo = hi = centre
    while lo > 0 and inside[lo - 1]:
        lo -= 1
    while hi < len(lp_axis) - 1 and inside[hi + 1]:
        hi += 1
    return max(lo - 1, 0), min(hi + 1, len(lp_axis) - 1)


def _explore_grid(
    h0: np.ndarray,
    neg_hess: np.ndarray,
    design: CrossedDesign,
    s: np.ndarray,
    n: np.ndarray,
    x0: _Latent | None,
    dz: float,
    drop: float,
    max_steps: int = 12,
) -> tuple[np.ndarray, _Field, np.ndarray]:
    """INLA's grid strategy in the standardised directions of the mode's curvature.

    Each axis is explored from the mode until the log density drops by more than ``drop``
    (one step beyond is kept), the product of the axes is evaluated and the points within
    ``drop`` of the mode are kept.
    """
    vals, vecs = np.linalg.eigh(neg_hess)
    scale = vecs / np.sqrt(np.maximum(vals, 1e-3))
    m = len(h0)
    steps = np.arange(-max_steps, max_steps + 1) * dz
    along = (h0[None, None, :] + steps[None, :, None] * scale.T[:, None, :]).reshape(-1, m)
    lp_axes = _log_post_h(along, design, s, n, x0)[1].reshape(m, -1)
    f0 = max(lp_axes[:, max_steps].max(), lp_axes.max())
    axes = []
    for i in range(m):
        lo, hi = _axis_range(lp_axes[i], f0, drop)
        axes.append(steps[lo : hi + 1])
    mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, m)
    points = h0 + mesh @ scale.T
    field, lp = _log_post_h(points, design, s, n, x0)
    keep = f0 - lp < drop
    return points[keep], _subset(field, keep), lp[keep]


def _subset(field: _Field, keep: np.ndarray) -> _Field:
    return _Field(
        field.b[keep],
        field.gamma[keep],
        field.schur[keep],
        field.diag[keep],
        field.site[keep],
        field.log_marginal[keep],
    )


@dataclass
class CrossedApproximation:
    """The integrated nested Laplace approximation of a crossed-factor model.

    Parameters
    ----------
    design : CrossedDesign
        The model's design.
    log_sd : numpy.ndarray
        ``(G, m)`` grid of log standard deviations.
    weights : numpy.ndarray
        ``(G,)`` posterior weights of the grid points (sum to 1).
    field : _Field
        Modes and curvature of the latent field at the grid points.
    eta : numpy.ndarray
        ``(C, E)`` eta grid of each cell marginal.
    density : numpy.ndarray
        ``(C, E)`` marginal density of each cell's eta on that grid (corrected).
    gaussian_cdf : numpy.ndarray
        ``(C, E)`` cdf of the uncorrected Gaussian-mixture marginal (used to map draws).
    """

    design: CrossedDesign
    log_sd: np.ndarray
    weights: np.ndarray
    field: _Field
    eta: np.ndarray
    density: np.ndarray
    gaussian_cdf: np.ndarray

    @property
    def cdf_eta(self) -> np.ndarray:
        """``(C, E)`` cdf of each cell's eta on its grid (trapezoid rule, ends at 0 and 1)."""
        d = self.density
        de = np.diff(self.eta, axis=1)
        cum = np.concatenate([np.zeros((d.shape[0], 1)), np.cumsum(0.5 * (d[:, 1:] + d[:, :-1]) * de, axis=1)], axis=1)
        return cum / cum[:, -1:]

    def means(self) -> np.ndarray:
        """Posterior mean of each cell's rate ``theta_c``, shape ``(C,)``."""
        return _trapezoid(self.density * special.expit(self.eta), self.eta)

    def variances(self) -> np.ndarray:
        """Posterior variance of each cell's rate ``theta_c``, shape ``(C,)``."""
        second = _trapezoid(self.density * special.expit(self.eta) ** 2, self.eta)
        return np.maximum(second - self.means() ** 2, 0.0)

    def quantiles(self, probs: Any) -> np.ndarray:
        """Quantiles of each cell's rate, shape ``(len(probs), C)``."""
        cdf = self.cdf_eta
        probs = np.atleast_1d(np.asarray(probs, dtype=float))
        out = np.empty((len(probs), cdf.shape[0]))
        for c in range(cdf.shape[0]):
            out[:, c] = np.interp(probs, cdf[c], self.eta[c])
        return special.expit(out)

    def cdf(self, threshold: float) -> np.ndarray:
        """``P(theta_c < threshold)`` per cell, shape ``(C,)``."""
        if threshold <= 0.0:
            return np.zeros(self.eta.shape[0])
        if threshold >= 1.0:
            return np.ones(self.eta.shape[0])
        t = special.logit(threshold)
        cdf = self.cdf_eta
        return np.array([np.interp(t, self.eta[c], cdf[c]) for c in range(cdf.shape[0])])

    def sample(self, draws: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Joint draws of the cell rates and of the grid index.

        Each draw picks a grid point by its weight and draws the latent field from its
        Gaussian approximation (``b`` from its Schur-complement precision, then ``gamma``
        given ``b``); each cell's eta is then mapped through the Gaussian mixture's cdf and
        the corrected marginal's quantile function, so the draws have the corrected
        marginals and the Laplace approximation's dependence (a Gaussian copula).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Rates ``(draws, C)`` and grid indices ``(draws,)``.
        """
        idx = rng.choice(len(self.weights), size=draws, p=self.weights)
        B, f = self.design.fixed, self.field
        eta = np.empty((draws, B.shape[0]))
        for g in np.unique(idx):
            rows = np.flatnonzero(idx == g)
            chol = np.linalg.cholesky(f.schur[g])
            z = rng.standard_normal((len(rows), B.shape[1]))
            db = np.linalg.solve(chol.T, z.T).T
            eta[rows] = (f.b[g] + db) @ B.T
            if self.design.interaction:
                shift = -(f.site[g] / f.diag[g]) * (db @ B.T)
                noise = rng.standard_normal((len(rows), B.shape[0])) / np.sqrt(f.diag[g])
                eta[rows] += f.gamma[g] + shift + noise
        cdf = self.cdf_eta
        for c in range(eta.shape[1]):
            u = np.interp(eta[:, c], self.eta[c], self.gaussian_cdf[c])
            eta[:, c] = np.interp(u, cdf[c], self.eta[c])
        return special.expit(eta), idx


def _trapezoid(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    return np.sum(0.5 * (values[:, 1:] + values[:, :-1]) * np.diff(grid, axis=1), axis=1)


def _cell_marginals(
    design: CrossedDesign, field: _Field, weights: np.ndarray, s: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tilted (cavity x exact likelihood) marginals of each cell's eta, mixed over the grid."""
    mean, var = field.eta_moments(design.fixed)
    prob = special.expit(mean)
    w_site = n * prob * (1.0 - prob)
    b_site = (s - n * prob) + w_site * mean
    cav_prec = np.maximum(1.0 / var - w_site, 1e-10)
    cav_mean = (mean / var - b_site) / cav_prec
    sd = np.sqrt(var)
    eta = np.linspace(np.min(mean - 7.0 * sd, axis=0), np.max(mean + 7.0 * sd, axis=0), ETA_POINTS).T  # (C, E)
    log_t = -0.5 * cav_prec[:, :, None] * (eta[None] - cav_mean[:, :, None]) ** 2 + _binomial_loglik(
        eta[None], s[None, :, None], n[None, :, None]
    )
    log_t -= log_t.max(axis=2, keepdims=True)
    tilted = np.exp(log_t)
    norm = np.sum(0.5 * (tilted[..., 1:] + tilted[..., :-1]) * np.diff(eta, axis=1)[None], axis=2)
    density = np.einsum("gc,gce->ce", weights[:, None] / norm, tilted)
    z = (eta[None] - mean[:, :, None]) / sd[:, :, None]
    gaussian_cdf = np.tensordot(weights, special.ndtr(z), axes=1)
    return eta, density, gaussian_cdf


def fit_crossed_laplace(
    s: np.ndarray,
    n: np.ndarray,
    codes: list,
    n_levels: list,
    names: list,
    *,
    interaction: bool = True,
    dz: float = 1.25,
    drop: float = 6.0,
) -> CrossedApproximation:
    """Integrated nested Laplace approximation of the crossed-factor logit-normal model.

    Parameters
    ----------
    s, n : numpy.ndarray
        Successes and trials per cell (cells without trials allowed).
    codes : list of numpy.ndarray
        Per factor, the level index of each cell.
    n_levels : list of int
        Levels per factor.
    names : list of str
        Factor names.
    interaction : bool
        Include the per-cell interaction.
    dz : float
        Grid step in standardised units of the standard deviations' posterior.
    drop : float
        Grid points whose log posterior is more than ``drop`` below the mode's are left out.

    Returns
    -------
    CrossedApproximation
        Grid, weights, latent modes and curvature, and the cell marginals.
    """
    s = np.asarray(s, dtype=float)
    n = np.asarray(n, dtype=float)
    design = build_design(codes, n_levels, names, interaction)
    if not design.sd_names:
        raise ValueError("the model needs at least one factor or the interaction")
    h0, x0 = _hyper_mode(design, s, n)
    neg_hess = _hessian(h0, design, s, n, x0)
    points, field, lp = _explore_grid(h0, neg_hess, design, s, n, x0, dz, drop)
    weights = np.exp(lp - lp.max())
    weights /= weights.sum()
    eta, density, gaussian_cdf = _cell_marginals(design, field, weights, s, n)
    return CrossedApproximation(design, points, weights, field, eta, density, gaussian_cdf)
