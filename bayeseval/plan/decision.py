"""The split decision: keep the class proportion, grow the test set, raise the minority
share, or degrade, when each group needs a minimum number of minority test rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bayeseval._api.results import OneRowResult
from bayeseval._api.validation import check_positive_int, check_positive_real, check_probability
from bayeseval._kernels.sizing import CEIL_RTOL, ceil_count

__all__ = ["split_decision", "SplitDecision"]


@dataclass(frozen=True, repr=False)
class SplitDecision(OneRowResult):
    """Outcome of :func:`split_decision`.

    Attributes
    ----------
    branch : str
        ``"proportional"`` (keep the class share), ``"grow_test"`` (a larger
        test set at the population share), ``"raise_share"`` (same test size,
        minority oversampled; report with reweighting) or ``"degraded"``
        (no option meets the request; the report is precision limited).
    n_total : int
        Rows available in all.
    n_test : int
        Final test-set size.
    share : float
        Population minority share.
    test_share : float
        Minority share of the final test set.
    n_minority_test : int
        Minority rows in the final test set.
    n_min_total : int
        Minority rows requested, ``n_groups * n_min``.
    n_minority_proportional : int
        Minority rows a proportional split of the *requested* test size gives,
        ``share * n_test`` (rounded).
    reweight : bool
        True when the test set over-represents the minority, so that overall
        metrics must be reweighted (population share / sample share row weights).
    reason : str
        Plain-English account of the decision.
    warning : str or None
        What the user must do or know (re-calibrate thresholds, precision
        limited), or None.
    n_minority_available : int
        Minority rows in all the data, ``share * n_total`` (rounded).
    max_groups : int
        Largest number of groups of ``n_min`` minority rows the final test set
        supports (useful for the "merge groups" remedy).
    n_min_achievable : int
        Minority rows per group the final test set gives (``n_minority_test //
        n_groups``).
    """

    branch: str
    n_total: int
    n_test: int
    share: float
    test_share: float
    n_minority_test: int
    n_min_total: int
    n_minority_proportional: int
    reweight: bool
    reason: str
    warning: str | None
    n_minority_available: int = 0
    max_groups: int = 0
    n_min_achievable: int = 0


def split_decision(
    *,
    n_total: int,
    n_test: int,
    share: float,
    n_min: int,
    n_groups: int = 1,
    max_test_share: float = 0.3,
    max_inflate: float = 5.0,
) -> SplitDecision:
    r"""Decide between keeping the class proportion and meeting a minimum count.

    A class-stratified split keeps the minority share but may leave the
    minority with a few dozen test rows. This function decides in this order:

    1. :math:`n_{\min,\text{total}} = K\, n_{\min}`.
    2. :math:`n^+_{\text{prop}} = \pi\, n_{\text{test}}`. If
       :math:`n^+_{\text{prop}} \ge n_{\min,\text{total}}`: keep the proportion.
    3. Grow the test set: :math:`n'_{\text{test}} = \lceil n_{\min,\text{total}}/\pi \rceil`;
       accepted when :math:`n'_{\text{test}} \le c\, N` (``max_test_share``).
    4. Raise the minority share: :math:`\pi'_{\text{test}} = n_{\min,\text{total}}/n_{\text{test}}`;
       accepted when :math:`\pi'_{\text{test}} \le \pi \cdot` ``max_inflate``.
       Overall metrics then need reweighting, and thresholds tuned on this set
       must be re-calibrated to the population share.
    5. Otherwise degrade: relax the target half-width, merge groups, or use
       cross-validation; the report is flagged "precision limited".

    Options 3 and 4 also require that the data hold enough minority rows,
    :math:`n_{\min,\text{total}} \le \pi N`.

    Parameters
    ----------
    n_total : int
        Rows available (N).
    n_test : int
        Requested test-set size.
    share : float
        Population share of the minority class, in (0, 1).
    n_min : int
        Minority test rows each group needs (from :func:`sample_size`).
    n_groups : int, default 1
        Number of groups (K) each needing ``n_min``.
    max_test_share : float, default 0.3
        Cap on the test set as a share of all rows.
    max_inflate : float, default 5.0
        Cap on the test minority share as a multiple of the population share.

    Returns
    -------
    SplitDecision
        The branch taken, the final test-set size and minority rows, whether
        metrics need reweighting, and a plain-English reason.

    Examples
    --------
    >>> d = split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323)
    >>> d.branch, d.n_test, d.n_minority_proportional
    ('grow_test', 76905, 252)
    >>> split_decision(n_total=300_000, n_test=60_000, share=0.0042, n_min=323,
    ...                n_groups=8).branch
    'degraded'
    """
    req = _split_request(n_total, n_test, share, n_min, n_groups, max_test_share, max_inflate)
    return _keep_proportion(req) or _grow_test(req) or _raise_share(req) or _degrade(req)


def _split_request(
    n_total: Any,
    n_test: Any,
    share: Any,
    n_min: Any,
    n_groups: Any,
    max_test_share: Any,
    max_inflate: Any,
) -> _SplitRequest:
    """Validate the inputs of :func:`split_decision`."""
    n_total = check_positive_int(n_total, "n_total")
    n_test = check_positive_int(n_test, "n_test")
    if n_test > n_total:
        raise ValueError(f"n_test must not exceed n_total ({n_total}), got {n_test}")
    share = check_probability(share, "share", open_interval=True)
    n_min = check_positive_int(n_min, "n_min")
    n_groups = check_positive_int(n_groups, "n_groups")
    max_test_share = check_probability(max_test_share, "max_test_share")
    if max_test_share == 0:
        raise ValueError(f"max_test_share must be positive, got {max_test_share!r}")
    max_inflate = check_positive_real(max_inflate, "max_inflate")
    if max_inflate < 1:
        raise ValueError(f"max_inflate must be >= 1 (1 means no oversampling), got {max_inflate!r}")
    return _SplitRequest(n_total, n_test, share, n_min, n_groups, max_test_share, max_inflate)


@dataclass(frozen=True)
class _SplitRequest:
    """The validated inputs of :func:`split_decision` and the quantities every branch uses."""

    n_total: int
    n_test: int
    share: float
    n_min: int
    n_groups: int
    max_test_share: float
    max_inflate: float

    @property
    def n_min_total(self) -> int:
        return self.n_groups * self.n_min

    @property
    def n_prop(self) -> int:
        return int(round(self.share * self.n_test))

    @property
    def available(self) -> int:
        return int(round(self.share * self.n_total))

    @property
    def grown(self) -> int:
        return ceil_count(self.n_min_total / self.share)

    @property
    def raised(self) -> float:
        return self.n_min_total / self.n_test

    @property
    def enough_minority(self) -> bool:
        return self.n_min_total <= self.share * self.n_total * (1.0 + CEIL_RTOL)

    @property
    def groups_txt(self) -> str:
        return f" ({self.n_groups} groups x {self.n_min})" if self.n_groups > 1 else ""

    def decide(
        self,
        branch: str,
        final_n: int,
        n_minority: int,
        reweight: bool,
        reason: str,
        warning: str | None,
        max_groups: int | None = None,
    ) -> SplitDecision:
        test_share = n_minority / final_n if branch == "raise_share" else self.share
        return SplitDecision(
            branch=branch,
            n_total=self.n_total,
            n_test=final_n,
            share=self.share,
            test_share=float(test_share),
            n_minority_test=int(n_minority),
            n_min_total=self.n_min_total,
            n_minority_proportional=self.n_prop,
            reweight=reweight,
            reason=reason,
            warning=warning,
            n_minority_available=self.available,
            max_groups=int(n_minority // self.n_min) if max_groups is None else max_groups,
            n_min_achievable=int(n_minority // self.n_groups),
        )


def _keep_proportion(req: _SplitRequest) -> SplitDecision | None:
    if req.share * req.n_test < req.n_min_total * (1.0 - CEIL_RTOL):
        return None
    return req.decide(
        "proportional",
        req.n_test,
        req.n_prop,
        False,
        f"a proportional test set of {req.n_test:,} rows holds about {req.n_prop:,} minority rows "
        f"(share {req.share:.4g}), at least the {req.n_min_total:,} requested{req.groups_txt}; "
        "keep the class proportion",
        None,
    )


def _grow_test(req: _SplitRequest) -> SplitDecision | None:
    grown = req.grown
    if not (req.enough_minority and grown <= req.max_test_share * req.n_total * (1.0 + CEIL_RTOL)):
        return None
    n_minority = max(req.n_min_total, int(math.floor(req.share * grown + 1e-9)))
    return req.decide(
        "grow_test",
        grown,
        n_minority,
        False,
        f"a proportional test set of {req.n_test:,} rows holds only about {req.n_prop:,} minority "
        f"rows, fewer than the {req.n_min_total:,} requested{req.groups_txt}; growing the test set "
        f"to {grown:,} rows ({grown / req.n_total:.1%} of the data, cap {req.max_test_share:.0%}) "
        "keeps the population share and meets the request",
        None,
    )


def _raise_share(req: _SplitRequest) -> SplitDecision | None:
    raised, share = req.raised, req.share
    if not (
        req.enough_minority and raised <= share * req.max_inflate * (1.0 + CEIL_RTOL) and req.n_min_total <= req.n_test
    ):
        return None
    return req.decide(
        "raise_share",
        req.n_test,
        req.n_min_total,
        True,
        f"growing the test set to {req.grown:,} rows would exceed the cap of "
        f"{req.max_test_share:.0%} of {req.n_total:,} rows; instead the {req.n_test:,}-row test set "
        f"takes {req.n_min_total:,} minority rows (share {raised:.4g}, {raised / share:.2f} x the "
        f"population share {share:.4g}, within the inflate cap {req.max_inflate:g})",
        "the test set over-represents the minority: report overall metrics with reweighting "
        "(population share / sample share), and re-calibrate any threshold tuned on this set "
        "to the population share",
    )


def _degrade(req: _SplitRequest) -> SplitDecision:
    if not req.enough_minority:
        why = [
            f"the data hold only about {req.available:,} minority rows, fewer than the {req.n_min_total:,} requested"
        ]
    else:
        why = [
            f"growing the test set would need {req.grown:,} rows (> {req.max_test_share:.0%} of {req.n_total:,})",
            f"raising the minority share would need {req.raised:.4g} (> {req.max_inflate:g} x {req.share:.4g})",
        ]
    # the most minority rows any option could give, for the "merge groups" remedy
    best = max(
        req.n_prop,
        min(req.available, int(math.floor(req.max_test_share * req.n_total * req.share + 1e-9))),
        min(req.available, req.n_test, int(math.floor(req.n_test * req.share * req.max_inflate + 1e-9))),
    )
    max_groups = best // req.n_min
    merge = (
        f"merge groups (at most {max_groups} groups of {req.n_min} can be met)"
        if max_groups
        else f"merge groups (not even one group of {req.n_min} can be met; at most {best:,} "
        "minority rows are reachable)"
    )
    per_group = req.n_prop // req.n_groups
    return req.decide(
        "degraded",
        req.n_test,
        req.n_prop,
        False,
        "the request cannot be met: " + "; ".join(why) + f". The proportional test set keeps "
        f"about {req.n_prop:,} minority rows ({per_group:,} per group); relax the target "
        f"half-width, {merge}, or fall back to cross-validation",
        f"precision limited: about {per_group:,} minority rows per group instead of {req.n_min:,}",
        max_groups=int(max_groups),
    )
