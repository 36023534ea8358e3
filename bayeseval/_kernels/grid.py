r"""Numerical integration of a two-dimensional posterior on an adaptive grid.

The hyperparameters of the hierarchical Beta-binomial model, ``(u, v) = (logit mu, log kappa)``,
are two-dimensional; :func:`integrate` evaluates an unnormalised log posterior on a regular
grid over the box holding its mass and returns trapezoid-rule weights (:class:`HyperGrid`).

The mode is found by damped Newton steps and the curvature there (a finite-difference Hessian)
sets the initial box (+-7.5 sd). The box is then expanded where the posterior has mass on its
edge (unless the edge is a bound) and shrunk to the region holding all but a negligible mass
(each end of each axis may leave out at most ``trim`` of it), and the final grid is evaluated at
``grid_size`` points per axis. Cells on the grid's edges carry half weight. Two presets:

``"accurate"``
    48 points per axis; a first pass at half that resolution before the final grid; each end
    of each axis may leave out 1e-8 of the mass. The final grid is then refined on the same
    box (``2 m - 1`` points per axis, up to 189) until the posterior moments of ``u``,
    ``v`` and ``exp(-v)`` agree with those of its every-other-point subgrid to 1e-2 (in
    sd units, or relative), so the preset stays accurate with very few strata, where the
    posterior is a funnel that 48 points do not resolve.
``"fast"``
    20 points per axis, and the first pass at that resolution is final when the box already
    fits the mass (about half the evaluations); each end of each axis may leave out 1e-5 of
    the mass. Used where the posterior is refitted after every batch of labels. With few
    strata the posterior of ``(logit mu, log kappa)`` is a funnel (wide in ``logit mu`` at
    small ``kappa``, narrow at large ``kappa``); the tighter box resolves its narrow part
    better (docs/validation.md, section 12i).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["PRESETS", "HyperGrid", "integrate"]

#: preset name -> points per axis of the final grid
PRESETS: dict[str, int] = {"fast": 20, "accurate": 48}
#: preset name -> mass each end of each axis may leave outside the grid
_PRESET_TRIM = {"fast": 1e-5, "accurate": 1e-8}


LogPost = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class HyperGrid:
    """A posterior integrated on a regular 2-D grid (flattened arrays of shape (G,)).

    Attributes
    ----------
    u, v : numpy.ndarray
        Coordinates of the grid points (row-major over ``shape``).
    log_post : numpy.ndarray
        Unnormalised log posterior at the points.
    weights : numpy.ndarray
        Trapezoid-rule posterior mass of each point (sums to 1).
    shape : tuple of int
        Points per axis.
    du, dv : float
        Spacing.
    log_evidence : float
        Log of the integral of the unnormalised posterior.
    mode : numpy.ndarray
        The posterior mode.
    hessian : numpy.ndarray
        Negative Hessian at the mode.
    edge_mass, top_mass, top_edge : float
        Mass on the grid's edge; mass per unit of ``v`` at the upper bound of ``v`` and the
        mass on that edge (zero unless the grid reaches the bound).
    log_weights : numpy.ndarray
        Log of ``weights``, computed from ``log_post`` so that it stays finite where
        ``weights`` underflows to 0 (a reweighting by a likelihood ratio can bring such a
        point back: see :func:`bayeseval._kernels.ppc.loo_weights`).
    open_edge : numpy.ndarray of bool
        Points on an edge of the grid that is not a bound of the parameters: mass there
        means the density goes on beyond the grid.
    """

    u: np.ndarray
    v: np.ndarray
    log_post: np.ndarray
    weights: np.ndarray
    shape: tuple[int, int]
    du: float
    dv: float
    log_evidence: float
    mode: np.ndarray
    hessian: np.ndarray
    edge_mass: float
    top_mass: float
    top_edge: float
    log_weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    open_edge: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    _compact: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    def compact(self, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Points holding all but ``tol`` of the mass: ``(u, v, weights)``, renormalised."""
        if tol not in self._compact:
            self._compact[tol] = _keep_mass(self.u, self.v, self.weights, tol)
        return self._compact[tol]

    def every_other(self, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every other point on each axis (twice the spacing), trapezoid weights, compacted."""
        m = self.shape
        lp = self.log_post.reshape(m)[::2, ::2]
        w = np.exp(lp - lp.max())
        for sl in (np.s_[0, :], np.s_[-1, :], np.s_[:, 0], np.s_[:, -1]):
            w[sl] *= 0.5
        u = self.u.reshape(m)[::2, ::2].ravel()
        v = self.v.reshape(m)[::2, ::2].ravel()
        return _keep_mass(u, v, (w / w.sum()).ravel(), tol)


def _keep_mass(u: np.ndarray, v: np.ndarray, w: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.argsort(w)
    keep = np.sort(order[np.cumsum(w[order]) > tol])
    return u[keep], v[keep], w[keep] / w[keep].sum()


def _evaluate(log_post: LogPost, gu: np.ndarray, gv: np.ndarray) -> np.ndarray:
    U, V = np.meshgrid(gu, gv, indexing="ij")
    lp = np.asarray(log_post(U.ravel(), V.ravel()), dtype=float).reshape(U.shape)
    return np.where(np.isfinite(lp), lp, -np.inf)


# -- accurate preset: the mode and curvature -------------------------------------------------
def _stencil(
    log_post: LogPost, x: np.ndarray, bmin: np.ndarray, bmax: np.ndarray, h: float = 1e-2
) -> tuple[float, np.ndarray, np.ndarray]:
    """Log posterior, gradient and negative Hessian at x by a 9-point stencil."""
    c = np.clip(x, bmin + h, bmax - h)
    steps = np.array([[i * h, j * h] for i in (-1, 0, 1) for j in (-1, 0, 1)])
    pts = c[None, :] + steps
    f = np.asarray(log_post(pts[:, 0], pts[:, 1]), dtype=float).reshape(3, 3)
    grad = np.array([(f[2, 1] - f[0, 1]) / (2 * h), (f[1, 2] - f[1, 0]) / (2 * h)])
    huu = (f[2, 1] - 2 * f[1, 1] + f[0, 1]) / h**2
    hvv = (f[1, 2] - 2 * f[1, 1] + f[1, 0]) / h**2
    huv = (f[2, 2] - f[2, 0] - f[0, 2] + f[0, 0]) / (4 * h**2)
    return float(f[1, 1]), grad, -np.array([[huu, huv], [huv, hvv]])


def _newton_step(grad: np.ndarray, hess: np.ndarray) -> np.ndarray:
    try:
        pd_ok = bool(np.all(np.linalg.eigvalsh(hess) > 1e-8))
    except np.linalg.LinAlgError:
        pd_ok = False
    step = np.linalg.solve(hess, grad) if pd_ok else grad / max(np.abs(grad).max(), 1.0)
    norm = float(np.abs(step).max())
    return step * (2.0 / norm) if norm > 2.0 else step


def find_mode(log_post: LogPost, bmin: np.ndarray, bmax: np.ndarray, start_u: float) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mode by damped Newton steps from ``(start_u, best v on a scan)``, and the
    negative Hessian there."""
    vs = np.linspace(max(-2.0, bmin[1]), min(12.0, bmax[1]), 15)
    lp0 = np.asarray(log_post(np.full_like(vs, start_u), vs), dtype=float)
    lp0 = np.where(np.isfinite(lp0), lp0, -np.inf)
    x = np.array([start_u, float(vs[np.argmax(lp0)])])
    fx, grad, hess = _stencil(log_post, x, bmin, bmax)
    for _ in range(60):
        step = _newton_step(grad, hess)
        for _ in range(30):
            cand = np.clip(x + step, bmin, bmax)
            fc = float(np.asarray(log_post(cand[:1], cand[1:]))[0])
            if np.isfinite(fc) and fc >= fx - 1e-12:
                break
            step *= 0.5
        else:
            break
        moved = float(np.abs(cand - x).max())
        x = cand
        fx, grad, hess = _stencil(log_post, x, bmin, bmax)
        if moved < 1e-7:
            break
    return x, hess


def _curvature_box(
    mode: np.ndarray, hess: np.ndarray, bmin: np.ndarray, bmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    try:
        cov = np.linalg.inv(hess)
        if not np.all(np.isfinite(cov)) or np.any(np.diag(cov) <= 0):
            raise np.linalg.LinAlgError
        sd = np.sqrt(np.diag(cov))
    except np.linalg.LinAlgError:
        sd = np.array([1.0, 3.0])
    sd = np.clip(sd, 1e-4, 10.0)
    return np.maximum(mode - 7.5 * sd, bmin), np.minimum(mode + 7.5 * sd, bmax)


# -- the shared adaptive loop -----------------------------------------------------------------
def _trim_ends(w: np.ndarray, trim: float) -> tuple[np.ndarray, np.ndarray]:
    """First and last index per axis outside which each end holds less than ``trim``."""
    m = np.array(w.shape)
    first, last = np.zeros(2, dtype=int), np.zeros(2, dtype=int)
    for d in range(2):
        marg = w.sum(axis=1 - d)
        first[d] = int(np.argmax(np.cumsum(marg) > trim))
        last[d] = m[d] - 1 - int(np.argmax(np.cumsum(marg[::-1]) > trim))
    return first, last


def _adjust(
    lo: np.ndarray,
    hi: np.ndarray,
    grids: tuple[np.ndarray, np.ndarray],
    first: np.ndarray,
    last: np.ndarray,
    bmin: np.ndarray,
    bmax: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Expand the box where mass sits on an edge (not a bound), else shrink to the mass."""
    width = hi - lo
    touched = False
    new_lo, new_hi = lo.copy(), hi.copy()
    for d in range(2):
        m = len(grids[d])
        if first[d] == 0 and lo[d] > bmin[d] + 1e-12:
            new_lo[d] = max(bmin[d], lo[d] - 0.5 * width[d])
            touched = True
        else:
            new_lo[d] = grids[d][max(first[d] - 2, 0)]
        if last[d] == m - 1 and hi[d] < bmax[d] - 1e-12:
            new_hi[d] = min(bmax[d], hi[d] + 0.5 * width[d])
            touched = True
        else:
            new_hi[d] = grids[d][min(last[d] + 2, m - 1)]
    return new_lo, new_hi, touched


def _refine(
    log_post: LogPost,
    lo: np.ndarray,
    hi: np.ndarray,
    bmin: np.ndarray,
    bmax: np.ndarray,
    m_start: int,
    m_final: int,
    final: bool,
    trim: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    m = m_start
    for _ in range(12):
        gu, gv = np.linspace(lo[0], hi[0], m), np.linspace(lo[1], hi[1], m)
        lp = _evaluate(log_post, gu, gv)
        w = np.exp(lp - lp.max())
        first, last = _trim_ends(w / w.sum(), trim)
        new_lo, new_hi, touched = _adjust(lo, hi, (gu, gv), first, last, bmin, bmax)
        if touched:
            lo, hi, final = new_lo, new_hi, False
            continue
        if final and np.all((last - first + 1) / m > 0.4):
            break
        lo, hi = new_lo, np.where(new_hi - new_lo <= 0, new_lo + 1e-3, new_hi)
        m, final = m_final, True
    return gu, gv, lp


def _open_edge(gu: np.ndarray, gv: np.ndarray, bmin: np.ndarray, bmax: np.ndarray) -> np.ndarray:
    """Points on an edge of the grid that is not a bound (flattened, row-major)."""
    edge = np.zeros((len(gu), len(gv)), dtype=bool)
    tol = 1e-12
    edge[0, :] |= gu[0] > bmin[0] + tol
    edge[-1, :] |= gu[-1] < bmax[0] - tol
    edge[:, 0] |= gv[0] > bmin[1] + tol
    edge[:, -1] |= gv[-1] < bmax[1] - tol
    return edge.ravel()


def _finish(
    gu: np.ndarray,
    gv: np.ndarray,
    lp: np.ndarray,
    bmin: np.ndarray,
    bmax: np.ndarray,
    mode: np.ndarray,
    hess: np.ndarray,
) -> HyperGrid:
    bmax_v = bmax[1]
    mx = lp.max()
    w = np.exp(lp - mx)
    edge = np.zeros_like(w, dtype=bool)
    edge[0, :] = edge[-1, :] = edge[:, 0] = edge[:, -1] = True
    edge_mass = float(w[edge].sum() / w.sum())
    dv = float(gv[1] - gv[0])
    at_top = gv[-1] >= bmax_v - 1e-12
    top_mass = float(w[:, -1].sum() / w.sum() / dv) if at_top else 0.0
    top_edge = float(w[:, -1].sum() / w.sum()) if top_mass else 0.0
    # trapezoid rule: half weight on the grid's edges (matters when an edge is a hard bound)
    half = np.zeros_like(w)
    for sl in (np.s_[0, :], np.s_[-1, :], np.s_[:, 0], np.s_[:, -1]):
        w[sl] *= 0.5
        half[sl] += np.log(0.5)
    total = w.sum()
    U, V = np.meshgrid(gu, gv, indexing="ij")
    du = float(gu[1] - gu[0])
    return HyperGrid(
        u=U.ravel(),
        v=V.ravel(),
        log_post=lp.ravel(),
        weights=(w / total).ravel(),
        shape=lp.shape,
        du=du,
        dv=dv,
        log_evidence=float(mx + np.log(total) + np.log(du * dv)),
        mode=np.asarray(mode, dtype=float),
        hessian=hess,
        edge_mass=edge_mass,
        top_mass=top_mass,
        top_edge=top_edge,
        log_weights=(lp + half - mx - np.log(total)).ravel(),
        open_edge=_open_edge(gu, gv, bmin, bmax),
    )


def integrate(
    log_post: LogPost,
    bounds: tuple[tuple[float, float], tuple[float, float]],
    *,
    preset: str = "accurate",
    grid_size: int | None = None,
    start_u: float = 0.0,
    trim: float | None = None,
) -> HyperGrid:
    """Integrate ``exp(log_post(u, v))`` on an adaptive grid within ``bounds``.

    Parameters
    ----------
    log_post : callable
        Vectorised unnormalised log posterior ``f(u, v) -> array`` (same shape as ``u``).
    bounds : ((float, float), (float, float))
        Hard bounds of ``u`` and ``v``.
    preset : {"fast", "accurate"}
        Resolution and passes (see the module docstring).
    grid_size : int, optional
        Points per axis of the final grid (default: the preset's).
    start_u : float
        Where the mode search starts on the ``u`` axis.
    trim : float, optional
        Mass each end of each axis may leave outside the grid (default: the preset's).

    Returns
    -------
    HyperGrid

    Examples
    --------
    >>> g = integrate(lambda u, v: -0.5 * (u**2 + v**2), ((-10, 10), (-10, 10)))
    >>> round(float(g.weights @ g.u**2), 3)
    1.0
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid choices are {sorted(PRESETS)}")
    m_final = PRESETS[preset] if grid_size is None else int(grid_size)
    trim = _PRESET_TRIM[preset] if trim is None else float(trim)
    bmin = np.array([bounds[0][0], bounds[1][0]], dtype=float)
    bmax = np.array([bounds[0][1], bounds[1][1]], dtype=float)
    mode, hess = find_mode(log_post, bmin, bmax, start_u)
    lo, hi = _curvature_box(mode, hess, bmin, bmax)
    if preset == "accurate":
        m_start, final = max(16, m_final // 2), False
    else:
        m_start, final = m_final, True
    gu, gv, lp = _refine(log_post, lo, hi, bmin, bmax, m_start, m_final, final, trim)
    if preset == "accurate":
        gu, gv, lp = _converge(log_post, gu, gv, lp)
    return _finish(gu, gv, lp, bmin, bmax, mode, hess)


#: accurate preset: largest points per axis, and the tolerance of the moment check
_MAX_POINTS = 193
_MOMENT_TOL = 1e-2


def _moments(gu: np.ndarray, gv: np.ndarray, lp: np.ndarray) -> np.ndarray:
    """Trapezoid-rule E[u], sd(u), E[v], sd(v) and E[exp(-v)] of the normalised density."""
    w = np.exp(lp - lp.max())
    for sl in (np.s_[0, :], np.s_[-1, :], np.s_[:, 0], np.s_[:, -1]):
        w[sl] *= 0.5
    w = w / w.sum()
    wu, wv = w.sum(axis=1), w.sum(axis=0)
    mu, mv = wu @ gu, wv @ gv
    su, sv = np.sqrt(max(wu @ (gu - mu) ** 2, 0.0)), np.sqrt(max(wv @ (gv - mv) ** 2, 0.0))
    return np.array([mu, su, mv, sv, wv @ np.exp(mv - gv)])


def _moment_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Largest change of the moments, in sd units for the means and relative otherwise."""
    su, sv = max(a[1], 1e-12), max(a[3], 1e-12)
    gaps = [
        abs(a[0] - b[0]) / su,
        abs(a[1] - b[1]) / su,
        abs(a[2] - b[2]) / sv,
        abs(a[3] - b[3]) / sv,
        abs(a[4] - b[4]) / max(abs(a[4]), 1e-300),
    ]
    return float(max(gaps))


def _converge(
    log_post: LogPost, gu: np.ndarray, gv: np.ndarray, lp: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Double the resolution on the same box until the moments stop moving.

    The grid at ``m`` points per axis is compared with its every-other-point subgrid;
    while the moments (:func:`_moments`) differ by more than ``_MOMENT_TOL`` the box is
    evaluated at ``2 m - 1`` points (the old points are kept), up to ``_MAX_POINTS``.
    This matters with few strata, where the posterior of ``(logit mu, log kappa)`` is a
    funnel whose narrow part 48 points do not resolve.
    """
    while len(gu) * 2 - 1 <= _MAX_POINTS:
        coarse = _moments(gu[::2], gv[::2], lp[::2, ::2])
        if _moment_gap(_moments(gu, gv, lp), coarse) <= _MOMENT_TOL:
            break
        m = 2 * len(gu) - 1
        gu, gv = np.linspace(gu[0], gu[-1], m), np.linspace(gv[0], gv[-1], m)
        lp = _evaluate(log_post, gu, gv)
    return gu, gv, lp
