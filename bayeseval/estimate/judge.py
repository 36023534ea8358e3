r"""How good a judge is, per stratum, from human labels: its predictive values, sensitivity and specificity.

A judge (a model-graded scorer) gives a verdict on every answer: pass (1) or fail (0). Humans
label some answers right (1) or wrong (0). Users build the labelled set as a *calibration set*:
"label 50 answers the judge passed and 50 it failed", not at random. Such a set is a random
sample *within each verdict* (and within each stratum, whatever the shares chosen), so the
rates it estimates without bias, unweighted, are those conditioned on the verdict:

* the judge's positive predictive value :math:`\mathrm{PPV} = P(\text{right} \mid \text{pass})`,
* its negative predictive value :math:`\mathrm{NPV} = P(\text{wrong} \mid \text{fail})`,

each with its exact (Clopper-Pearson) interval from the labelled answers of that verdict. The
rates conditioned on the truth -- sensitivity :math:`P(\text{pass} \mid \text{right})` and
specificity :math:`P(\text{fail} \mid \text{wrong})` -- are *not* estimated without bias by the
unweighted labelled rows (a 50/50 set over-represents the rarer verdict); they follow from the
predictive values and the verdict's share :math:`q = P(\text{pass})`, known from every answer of
the stratum (Bayes' rule):

.. math::

    \mathrm{sens} = \frac{q\,\mathrm{PPV}}{q\,\mathrm{PPV} + (1 - q)(1 - \mathrm{NPV})}, \qquad
    \mathrm{spec} = \frac{(1 - q)\,\mathrm{NPV}}{(1 - q)\,\mathrm{NPV} + q\,(1 - \mathrm{PPV})}.

Both increase with PPV and with NPV, so their limits are the formulas at the limits of PPV and
NPV, each taken at level :math:`1 - (1 - \text{level})/2` (Bonferroni): the two exact intervals
hold together with probability at least ``level``, and then so do the derived ones. This is the
same as weighting the labelled rows by the inverse of their inclusion probability within each
verdict (with the inclusion probability of each verdict within the stratum, the Hajek estimate
of sensitivity is the formula at the estimated PPV and NPV), without needing the probabilities. Like the proxy estimator (:func:`~bayeseval.proxy_ci`), it
treats the verdict shares of the stratum's answers as known.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._api.validation import check_level, short_repr
from bayeseval._kernels.binomial import binomial_bounds

__all__ = ["judge_calibration"]

_OVERALL = "(all)"


def _binary(values: pd.Series, argument: str) -> None:
    bad = values.dropna()[~values.dropna().isin((0, 1))]
    if len(bad):
        raise ValueError(
            f"{argument}={values.name!r}: the column must hold 0 or 1 (pass/fail, right/wrong), "
            f"got {short_repr(bad.iloc[0])}"
        )


def _columns(frame: Any, human: Any, judge: Any, strata: Any) -> tuple[pd.DataFrame, list[str]]:
    table = getattr(frame, "frame", frame)
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"frame: expected a DataFrame or a reader's result, got {type(frame).__name__}")
    cols = [] if strata is None else [strata] if isinstance(strata, str) else list(strata)
    if not all(isinstance(c, str) for c in cols) or (strata is not None and not isinstance(strata, str | Sequence)):
        raise TypeError(f"strata: expected a column name or a list of them, got {short_repr(strata)}")
    for argument, col in [("human", human), ("judge", judge), *(("strata", c) for c in cols)]:
        if not isinstance(col, str) or col not in table.columns:
            raise ValueError(f"{argument}={col!r} is not a column of frame; columns are {list(table.columns)[:20]}")
    if table[judge].isna().any():
        raise ValueError(f"judge={judge!r}: the judge's verdict must be known on every row")
    _binary(table[human], "human")
    _binary(table[judge], "judge")
    return table, cols


def judge_calibration(
    frame: Any, *, human: str = "human", judge: str = "outcome", strata: str | Sequence[str] | None = None, level=0.95
) -> pd.DataFrame:
    """The judge's per-stratum predictive values, sensitivity and specificity, with exact intervals.

    Valid whether the labelled answers were drawn at random or chosen by the judge's verdict (a
    calibration set "50 passed, 50 failed", any shares, within each stratum or over all): see
    the module's notes for why the predictive values need no weights and how the rates
    conditioned on the truth follow from them.

    Parameters
    ----------
    frame : pandas.DataFrame or EvalRecords
        One row per answer (a reader's frame with :func:`~bayeseval.io.join_labels`'s column).
    human : str, default "human"
        The human label: 1 right, 0 wrong, NaN on unlabelled answers.
    judge : str, default "outcome"
        The judge's verdict on every answer: 1 pass, 0 fail.
    strata : str or list of str, optional
        Stratum columns; default one stratum, ``"(all)"``.
    level : float, default 0.95
        Level of every interval.

    Returns
    -------
    pandas.DataFrame
        One row per stratum: ``answers`` and ``pass_share`` (all its answers, the judge's pass
        share :math:`q`); ``labelled_pass``/``right_pass`` and ``labelled_fail``/``wrong_fail``
        (labelled answers per verdict, and those the human agrees with); ``ppv``, ``npv`` with
        their Clopper-Pearson limits (``*_lower``, ``*_upper``, at ``level``); ``sensitivity``,
        ``specificity`` and ``agreement`` (:math:`q\\,\\mathrm{PPV} + (1-q)\\,\\mathrm{NPV}`,
        how often the judge's verdict is the truth) with limits from the predictive values'
        limits at level :math:`1 - (1 - \\text{level})/2` each. NaN where a verdict has no
        labelled answer (its limits are then 0 and 1).

    Raises
    ------
    ValueError
        A column that is missing or not 0/1, a verdict missing on some row, a bad level.
    TypeError
        When ``frame`` is not a DataFrame.

    Examples
    --------
    Ten answers per category, three labelled per verdict:

    >>> import pandas as pd
    >>> rows = pd.DataFrame({"cat": ["x"] * 10, "outcome": [1] * 6 + [0] * 4,
    ...                      "human": [1, 1, 0, None, None, None, 0, 0, 1, None]})
    >>> t = judge_calibration(rows, strata="cat")
    >>> t.loc["x", ["pass_share", "ppv", "npv"]].round(3).tolist()
    [0.6, 0.667, 0.667]
    >>> round(float(t.loc["x", "sensitivity"]), 3)  # 0.6 * 2/3 / (0.6 * 2/3 + 0.4 * 1/3)
    0.75
    """
    level = check_level(level)
    table, cols = _columns(frame, human, judge, strata)
    keys = [table[c] for c in cols] if cols else pd.Series(_OVERALL, index=table.index, name="stratum")
    verdict = table[judge].astype(float)
    truth = table[human].astype(float)
    labelled = truth.notna()
    parts = pd.DataFrame(
        {
            "answers": 1,
            "passes": verdict,
            "labelled_pass": (labelled & (verdict == 1)).astype(int),
            "right_pass": (labelled & (verdict == 1) & (truth == 1)).astype(int),
            "labelled_fail": (labelled & (verdict == 0)).astype(int),
            "wrong_fail": (labelled & (verdict == 0) & (truth == 0)).astype(int),
        },
        index=table.index,
    )
    out = parts.groupby(keys, sort=True).sum()
    out["pass_share"] = out.pop("passes") / out["answers"]
    alpha = 1.0 - level
    q = out["pass_share"].to_numpy(float)
    values = {}
    for name, s, n in (("ppv", "right_pass", "labelled_pass"), ("npv", "wrong_fail", "labelled_fail")):
        s_, n_ = out[s].to_numpy(float), out[n].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            values[name] = np.where(n_ > 0, s_ / np.maximum(n_, 1), np.nan)
        values[f"{name}_lower"], values[f"{name}_upper"] = binomial_bounds(s_, n_, alpha, "clopper_pearson")
        values[f"{name}_joint"] = binomial_bounds(s_, n_, alpha / 2, "clopper_pearson")
    for name in ("ppv", "ppv_lower", "ppv_upper", "npv", "npv_lower", "npv_upper"):
        out[name] = values[name]
    (p_lo, p_hi), (n_lo, n_hi) = values["ppv_joint"], values["npv_joint"]
    for name, f in (("sensitivity", _sensitivity), ("specificity", _specificity), ("agreement", _agreement)):
        out[name] = f(q, values["ppv"], values["npv"])
        out[f"{name}_lower"] = np.nan_to_num(f(q, p_lo, n_lo), nan=0.0)
        out[f"{name}_upper"] = np.nan_to_num(f(q, p_hi, n_hi), nan=1.0)
    out.index.name = "stratum" if not cols else out.index.name
    return out


def _sensitivity(q: np.ndarray, ppv: Any, npv: Any) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return q * ppv / (q * ppv + (1 - q) * (1 - npv))


def _specificity(q: np.ndarray, ppv: Any, npv: Any) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (1 - q) * npv / ((1 - q) * npv + q * (1 - ppv))


def _agreement(q: np.ndarray, ppv: Any, npv: Any) -> np.ndarray:
    return q * np.asarray(ppv, float) + (1 - q) * np.asarray(npv, float)
