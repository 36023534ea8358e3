"""What an evaluation finds, as data: :class:`Finding` and the sections that return findings.

Each function here reads the report's table (or counts) and returns findings: empty strata and
rates of 0 or 1, strata too wide for the target, what the model checks single out, what
``lower`` and ``upper`` promise, and a test set whose composition differs from the population.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bayeseval._api.results import Result
from bayeseval._kernels.conflict import READ_ADAPTIVE_P
from bayeseval._render.formats import fixed, key_label, labels_text, n_strata
from bayeseval.counts.counts import Counts
from bayeseval.plan.sizes import sample_size

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.report.arguments import Settings

__all__ = ["Finding"]

# composition check: a stratum's sample share differs from its population share by more
# than this (absolute) or by a factor beyond 1.5 either way
_SHARE_TOL = 0.05
_SHARE_RATIO = 1.5


@dataclass(frozen=True, repr=False)
class Finding(Result):
    """One thing :func:`evaluate` found, as data: a short flag, the strata and a message.

    Rendering (text, HTML, Markdown) only formats findings; the report's
    ``warnings`` and ``notes`` are the messages of its findings.

    Parameters
    ----------
    flag : str
        Short tag, e.g. ``"empty"``, ``"rate 0"``, ``"too wide"``, ``"model check"``,
        ``"composition"``. A finding about strata adds its flag to their ``flags`` cell.
    strata : tuple
        The strata it concerns; empty for a finding about the whole evaluation.
    message : str
        The plain-English sentence shown to the reader.
    severity : {"warning", "note"}
        Warnings call for attention; notes explain how to read the numbers.

    Examples
    --------
    >>> from bayeseval import Counts, evaluate
    >>> rep = evaluate(Counts.from_arrays([0, 5], [40, 50], strata=["a", "b"]), random_seed=0)
    >>> ("rate 0", ("a",)) in [(f.flag, f.strata) for f in rep.findings]
    True
    """

    flag: str
    strata: tuple[Any, ...]
    message: str
    severity: str = "warning"

    @property
    def table(self) -> pd.DataFrame:
        """The finding as a tidy table: one row per stratum it concerns (one row if none).

        Returns
        -------
        pandas.DataFrame
            Columns ``flag``, ``stratum`` (None for a finding about the whole evaluation),
            ``message`` and ``severity``.
        """
        strata = list(self.strata) or [None]
        return pd.DataFrame({"flag": self.flag, "stratum": strata, "message": self.message, "severity": self.severity})


@dataclass
class Pooled:
    """The pooled model's section: posterior, its summary and the model-check results."""

    post: Any = None
    summary: pd.DataFrame | None = None
    ppc_p: np.ndarray | None = None
    flagged: np.ndarray | None = None
    checks: pd.DataFrame = field(default_factory=lambda: _empty_checks())
    findings: list[Finding] = field(default_factory=list)


def _empty_checks() -> pd.DataFrame:
    checks = pd.DataFrame(
        {"statistic": pd.Series(dtype=str), "p_value": pd.Series(dtype=float), "verdict": pd.Series(dtype=str)}
    )
    checks.index.name = "check"
    return checks


def stratum_findings(counts: Counts, own: tuple[np.ndarray, np.ndarray], metric_name: str) -> list[Finding]:
    """Empty strata and strata at a rate of 0 or 1."""
    has = (counts.trials > 0).to_numpy()
    empty = list(counts.strata[~has])
    out = []
    if empty:
        out.append(
            Finding(
                "empty",
                tuple(empty),
                (
                    f"{n_strata(len(empty))} {'has' if len(empty) == 1 else 'have'} no trials for "
                    f"{metric_name} and no estimate: {labels_text(empty)}."
                ),
            )
        )
    s, n = counts.successes.to_numpy(), counts.trials.to_numpy()
    edge = has & ((s == 0) | (s == n))
    labels = counts.strata[edge]
    for k, sk, nk, lo, hi in zip(labels, s[edge], n[edge], own[0][edge], own[1][edge], strict=True):
        sk, nk = int(sk), int(nk)
        which = "0" if sk == 0 else "1"
        out.append(
            Finding(
                f"rate {which}",
                (k,),
                (
                    f"Stratum {key_label(k)!r} has a rate of {which} ({sk} of {nk}): the plug-in "
                    f"standard error is 0, which is not certainty; its exact interval "
                    f"[{fixed(lo, 3)}, {fixed(hi, 3)}] is the honest range."
                ),
            )
        )
    return out


def target_section(table: pd.DataFrame, cfg: Settings) -> tuple[np.ndarray, list[Finding]]:
    """Labels still needed per stratum for the target and a finding per stratum that is too wide.

    The planner is Clopper-Pearson's under ``"stratum"`` (the exact interval the adaptive one
    is measured against), Wilson's under ``"average"``.
    """
    target, level = cfg.target_halfwidth, cfg.level
    plan = "clopper_pearson" if cfg.guarantee.per_stratum else "wilson"
    extra = np.zeros(len(table))
    findings = []
    for i, (k, row) in enumerate(table.iterrows()):
        n = int(row["trials"])
        if n == 0:
            extra[i] = _extra_needed(0.5, 0, target, level, plan)
            continue
        if row["halfwidth"] <= target:
            continue
        extra[i] = _extra_needed(float(row["rate"]), n, target, level, plan)
        more = (
            f"about {int(extra[i])} more labels (at its observed rate {fixed(row['rate'], 3)})"
            if extra[i] > 0
            else "more labels (the planning formula at its observed rate says it should already be close)"
        )
        findings.append(
            Finding(
                "too wide",
                (k,),
                (
                    f"Stratum {key_label(k)!r} is too small for a half-width of {target:g}: "
                    f"{n} trials give {fixed(row['halfwidth'], 3)}; it needs {more}."
                ),
            )
        )
    return extra, findings


def proxy_target(table: pd.DataFrame, counts: Counts, cfg: Settings) -> tuple[np.ndarray, list[Finding]]:
    """Labels still needed with a proxy: the planner's need (Clopper-Pearson) in effective
    labels, converted to labels at the stratum's current effective labels per label."""
    target, level = cfg.target_halfwidth, cfg.level
    labelled, n_eff = table["trials"].to_numpy(float), counts.trials.to_numpy(float)
    extra = np.zeros(len(table))
    findings = []
    for i, (k, row) in enumerate(table.iterrows()):
        if labelled[i] == 0:
            extra[i] = _extra_needed(0.5, 0, target, level, "clopper_pearson")
            continue
        if row["halfwidth"] <= target:
            continue
        per_label = max(n_eff[i] / labelled[i], 1.0)
        rate = float(row["rate"])
        extra[i] = math.ceil(_extra_needed(rate, int(n_eff[i]), target, level, "clopper_pearson") / per_label)
        findings.append(
            Finding(
                "too wide",
                (k,),
                (
                    f"Stratum {key_label(k)!r} is too small for a half-width of {target:g}: {int(labelled[i])} "
                    f"labels with the proxy (worth {n_eff[i]:.0f}) give {fixed(row['halfwidth'], 3)}; it needs "
                    f"about {int(extra[i])} more labels (at its estimated rate {fixed(rate, 3)} and "
                    f"{per_label:.2f} effective labels per label)."
                ),
            )
        )
    return extra, findings


def _extra_needed(rate: float, trials: int, target: float, level: float, method: str) -> float:
    r = min(max(rate, 0.0), 1.0)
    need = sample_size(halfwidth=target, rate=r, level=level, method=method)
    return float(max(0, int(need) - int(trials)))


def model_findings(table: pd.DataFrame, own: tuple[np.ndarray, np.ndarray], pooled: Pooled) -> list[Finding]:
    """Strata the model checks single out, strong shrinkage, disagreement, failed global checks.

    The pooled interval is compared with ``own``, the stratum's exact interval.
    """
    index = table.index
    lower, upper = own
    out = []
    bad = list(index[pooled.flagged])
    if bad:
        out.append(
            Finding(
                "model check",
                tuple(bad),
                (
                    f"The pooled model finds {n_strata(len(bad))} extreme under its own predictions: "
                    f"{labels_text(bad)}. Their pooled estimates may be pulled too far toward the "
                    "others: their lower and upper are the adaptive interval, which keeps its "
                    "coverage; or refit with model='robust'."
                ),
            )
        )
    width_ratio = (table["pooled_upper"] - table["pooled_lower"]).to_numpy() / (upper - lower)
    shrunk = list(index[(table["shrinkage"].to_numpy() >= 0.5) & (width_ratio < 0.5)])
    if shrunk:
        out.append(
            Finding(
                "strong shrinkage",
                tuple(shrunk),
                (
                    f"Strata whose pooled estimate leans heavily on the other strata (at least half its "
                    f"weight on the population mean, and a credible interval under half the width of "
                    f"the stratum's exact interval): {labels_text(shrunk)}. Their credible intervals "
                    "borrow certainty from the pooling assumption; the exact interval is what keeps "
                    "its coverage for the stratum."
                ),
            )
        )
    pooled_lo, pooled_hi = table["pooled_lower"].to_numpy(), table["pooled_upper"].to_numpy()
    disagree = list(index[(pooled_hi < lower) | (pooled_lo > upper)])
    if disagree:
        out.append(
            Finding(
                "estimates disagree",
                tuple(disagree),
                (
                    f"For {labels_text(disagree)} the pooled estimate and the raw rate disagree: the "
                    "credible interval and the stratum's exact interval do not overlap."
                ),
            )
        )
    checks = pooled.checks
    glob = [c for c in checks.index if c != "ppc_counts" and not str(checks.loc[c, "verdict"]).startswith("ok")]
    if glob:
        out.append(
            Finding(
                "model spread",
                (),
                (
                    "The pooled model does not reproduce the spread of the stratum rates "
                    f"({', '.join(c.removeprefix('ppc_') for c in glob)} check failed); treat the "
                    "pooled intervals with care."
                ),
            )
        )
    return out


def guarantee_findings(table: pd.DataFrame, cfg: Settings) -> list[Finding]:
    """A note saying what lower and upper promise; under "average", the strata read adaptive."""
    pct = f"{100 * cfg.level:g}%"
    if cfg.proxy is not None:
        return _proxy_guarantee_findings(table, cfg, pct)
    if cfg.guarantee.per_stratum:
        return [
            Finding(
                "guarantee",
                (),
                (
                    f"Guarantee 'stratum': each stratum's lower and upper cover its own rate at least "
                    f"{pct} of the time whatever that rate is (the adaptive interval, built from exact "
                    "tests whose tails are split by a prior from the other strata only; "
                    "Clopper-Pearson when fewer than two strata have trials). pooled_lower and "
                    "pooled_upper, the pooled posterior, cover on average over strata like these, not "
                    "for a stratum that differs."
                ),
                "note",
            )
        ]
    notes = [
        Finding(
            "guarantee",
            (),
            (
                "Guarantee 'average': lower and upper are the interval read for each stratum, the "
                "pooled posterior unless the stratum's count looks atypical of the others (then its "
                "adaptive interval). That covers on average over strata like these, not for a "
                "stratum that differs and happens to look typical: an outlier the conflict check "
                "misses is covered only as often as the check fires. Use guarantee='stratum' for "
                "coverage of every stratum at every rate."
            ),
            "note",
        )
    ]
    adaptive = list(table.index[(table["read"] == "adaptive").to_numpy()])
    if not adaptive:
        return notes
    # about the evaluation, not the strata: the read column marks them (a flag would mark
    # about one alike stratum in five, by design of the threshold)
    return notes + [
        Finding(
            "read adaptive",
            (),
            (
                f"{n_strata(len(adaptive))} {'reads' if len(adaptive) == 1 else 'read'} the adaptive "
                f"interval instead of the pooled one: {labels_text(adaptive)}. "
                f"{'Its count is' if len(adaptive) == 1 else 'Their counts are'} not clearly typical "
                "of what the other strata predict (leave-one-out conflict p-value at most "
                f"{READ_ADAPTIVE_P:g}, or flagged), so pooling may pull "
                f"{'it' if len(adaptive) == 1 else 'them'} too far; the adaptive interval comes from "
                "the stratum's own data and keeps its coverage whatever the other strata say. "
                "lower and upper give it; read_reason in the exported table (to_frame, CSV, JSON) "
                "says why."
            ),
            "note",
        )
    ]


def _proxy_guarantee_findings(table: pd.DataFrame, cfg: Settings, pct: str) -> list[Finding]:
    """What lower and upper promise with a proxy, and what the proxy was worth."""
    own = (
        f"the stratum's proxy interval (post-stratified over the proxy's cells, "
        f"Clopper-Pearson cell limits combined by MOVER; labels only where the proxy does "
        f"not pay), which covers the stratum's own rate at least {pct} of the time whatever "
        "that rate is when the labels are drawn at random within the stratum"
    )
    if cfg.design is not None and cfg.design.cluster is not None:
        own = (
            f"the stratum's proxy interval over the units of {cfg.design.cluster!r} (post-stratified "
            "over the units' proxy cells, each cell's betting limits from its labelled units combined "
            f"by MOVER; labels only where the proxy does not pay), which covered the stratum's rate at "
            f"least {pct} of the time in the seeded validation when the labelled units are drawn at "
            "random within the stratum"
        )
    if cfg.inclusion is not None:
        own = (
            f"the stratum's proxy interval with inverse-probability weighted cell rates "
            f"(inclusion {cfg.inclusion!r}): an asymptotic interval, exact only when the "
            "probabilities are equal within the stratum"
        )
    if cfg.guarantee.per_stratum:
        text = f"Guarantee 'stratum' with proxy {cfg.proxy!r}: lower and upper are {own}."
    else:
        text = (
            f"Guarantee 'average' with proxy {cfg.proxy!r}: lower and upper are the pooled "
            "posterior, fitted to each stratum's effective counts, unless the stratum's count "
            f"looks atypical of the others (read 'proxy': then {own}). The pooled interval "
            "covers on average over strata like these, not for a stratum that differs."
        )
    used = int(table["proxy_used"].sum())
    return [
        Finding("guarantee", (), text, "note"),
        Finding(
            "proxy",
            (),
            (
                f"The proxy narrows the interval of {used} of {n_strata(len(table))} (proxy_used); "
                "effective_labels is what a stratum's labels are worth with it, agreement how often a "
                "label proxy's verdict matches the truth on the labelled rows."
            ),
            "note",
        ),
    ]


def composition_findings(counts: Counts, overall: pd.DataFrame, shares: pd.Series | None = None) -> list[Finding]:
    """The test set's composition (``shares``; default the counts' sample shares) against the
    population shares."""
    if counts.weights is None or int(counts.trials.sum()) == 0:
        return []
    share, w = (counts.sample_shares if shares is None else shares), counts.weights
    ratio = np.where(w > 0, share / w.where(w > 0, np.nan), np.inf)
    off = (np.abs(share - w) > _SHARE_TOL) | (ratio > _SHARE_RATIO) | (ratio < 1 / _SHARE_RATIO)
    if not bool(np.asarray(off).any()):
        return []
    worst = (share - w).abs().idxmax()
    un = overall.loc["unweighted", "estimate"]
    re = overall.loc["reweighted", "estimate"] if "reweighted" in overall.index else np.nan
    use = (
        f"use the reweighted rate ({fixed(re)})."
        if np.isfinite(re)
        else "the reweighted rate is undefined here (see above)."
    )
    return [
        Finding(
            "composition",
            (),
            (
                "The test set's composition differs from the population "
                f"(e.g. {key_label(worst)!r}: {share.loc[worst]:.1%} of the test set, "
                f"{w.loc[worst]:.1%} of the population), so the unweighted rate "
                f"({fixed(un)}) is not a population estimate; {use}"
            ),
        )
    ]


_TABLE_FLAGS = ("empty", "rate 0", "rate 1", "too wide", "model check", "strong shrinkage", "estimates disagree")


def table_flags(index: pd.Index, findings: Sequence[Finding]) -> list[str]:
    """The ``flags`` cell of every stratum, from the findings about strata."""
    flags: dict[Any, list[str]] = {k: [] for k in index}
    for f in sorted(
        findings, key=lambda f: _TABLE_FLAGS.index(f.flag) if f.flag in _TABLE_FLAGS else len(_TABLE_FLAGS)
    ):
        if f.flag in _TABLE_FLAGS:
            for k in f.strata:
                flags[k].append(f.flag)
    return [", ".join(flags[k]) for k in index]
