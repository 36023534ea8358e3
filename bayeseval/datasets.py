"""Bundled real data sets and generators of synthetic scenarios with known rates.

Real data (shipped inside the package, work offline; sources and licences in
``bayeseval/data/README.md``):

- :func:`load_german_credit`: UCI Statlog German Credit Data, 1,000 applicants,
  20 attributes and a good/bad credit label (Hofmann 1994, CC BY 4.0). 371
  applicants are younger than 30 (``age < 30``), the small subgroup the examples study.
- :func:`load_compas`: ProPublica's COMPAS two-year recidivism data, 7,214
  defendants (6,172 after ProPublica's own filter), with race, sex and age group
  and the COMPAS risk score as a ready-made classifier.

Synthetic data (reproducible with ``random_seed``; the true rates travel with
the data so tests and demos can check what an estimator recovers):

- :func:`make_strata`: successes and trials per stratum with known rates.
- :func:`make_pool`: a row-level pool of predictions with stratum keys, hidden
  true labels and a calibrated confidence, for labelling campaigns.
- :func:`make_fraud_scenario`: a fraud-detection scenario (a rare
  positive class, several subgroups, two models of known recall per group).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from bayeseval._api.docs import fill_doc
from bayeseval._api.validation import check_positive_int, check_probability, make_rng
from bayeseval.counts.counts import Counts

__all__ = [
    "GERMAN_CREDIT_CODES",
    "load_german_credit",
    "load_compas",
    "make_strata",
    "make_pool",
    "make_fraud_scenario",
]

# Decoding of the qualitative attributes of german.data, from the data set's own
# documentation (german.doc, UCI Statlog). Values are kept short and readable.
GERMAN_CREDIT_CODES: dict[str, dict[str, str]] = {
    "checking_account": {
        "A11": "< 0 DM",
        "A12": "0 to < 200 DM",
        "A13": ">= 200 DM or salary assigned",
        "A14": "no checking account",
    },
    "credit_history": {
        "A30": "no credits taken or all paid back duly",
        "A31": "all credits at this bank paid back duly",
        "A32": "existing credits paid back duly till now",
        "A33": "delay in paying off in the past",
        "A34": "critical account or other credits elsewhere",
    },
    "purpose": {
        "A40": "car (new)",
        "A41": "car (used)",
        "A42": "furniture/equipment",
        "A43": "radio/television",
        "A44": "domestic appliances",
        "A45": "repairs",
        "A46": "education",
        "A47": "vacation",
        "A48": "retraining",
        "A49": "business",
        "A410": "others",
    },
    "savings": {
        "A61": "< 100 DM",
        "A62": "100 to < 500 DM",
        "A63": "500 to < 1000 DM",
        "A64": ">= 1000 DM",
        "A65": "unknown or no savings account",
    },
    "employment_since": {
        "A71": "unemployed",
        "A72": "< 1 year",
        "A73": "1 to < 4 years",
        "A74": "4 to < 7 years",
        "A75": ">= 7 years",
    },
    "personal_status_sex": {
        "A91": "male: divorced/separated",
        "A92": "female: divorced/separated/married",
        "A93": "male: single",
        "A94": "male: married/widowed",
        "A95": "female: single",
    },
    "other_debtors": {"A101": "none", "A102": "co-applicant", "A103": "guarantor"},
    "property": {
        "A121": "real estate",
        "A122": "building society savings or life insurance",
        "A123": "car or other",
        "A124": "unknown or no property",
    },
    "other_installment_plans": {"A141": "bank", "A142": "stores", "A143": "none"},
    "housing": {"A151": "rent", "A152": "own", "A153": "for free"},
    "job": {
        "A171": "unemployed or unskilled non-resident",
        "A172": "unskilled resident",
        "A173": "skilled employee or official",
        "A174": "management, self-employed or highly qualified",
    },
    "telephone": {"A191": "none", "A192": "yes"},
    "foreign_worker": {"A201": "yes", "A202": "no"},
}

_GERMAN_ATTRIBUTES = [
    "checking_account",
    "duration_months",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "employment_since",
    "installment_rate",
    "personal_status_sex",
    "other_debtors",
    "residence_since",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "existing_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
]


def _data_path(name: str) -> Any:
    return resources.files("bayeseval").joinpath("data", name)


def load_german_credit(*, as_frame: bool = True, decode: bool = True) -> pd.DataFrame | tuple[pd.DataFrame, pd.Series]:
    """Load the UCI Statlog German Credit Data (1,000 applicants), bundled with the package.

    Parameters
    ----------
    as_frame : bool, default True
        ``True`` returns one DataFrame. ``False`` returns ``(X, y)``: the 20
        attributes and the label ``good_credit`` (1 good, 0 bad), ready for a
        scikit-learn pipeline.
    decode : bool, default True
        Replace the file's codes (``"A11"``, ...) by readable values using
        :data:`GERMAN_CREDIT_CODES`; ``False`` keeps the original codes.

    Returns
    -------
    pandas.DataFrame or (pandas.DataFrame, pandas.Series)
        Columns: the 20 attributes of ``german.doc`` under snake-case names
        (``checking_account``, ``duration_months``, ``credit_history``,
        ``purpose``, ``credit_amount``, ``savings``, ``employment_since``,
        ``installment_rate``, ``personal_status_sex``, ``other_debtors``,
        ``residence_since``, ``property``, ``age``, ``other_installment_plans``,
        ``housing``, ``existing_credits``, ``job``, ``people_liable``,
        ``telephone``, ``foreign_worker``), then the derived columns

        - ``sex``: ``"male"`` or ``"female"`` (from ``personal_status_sex``);
        - ``age_group``: ``"under 30"`` (``age < 30``: 371 applicants) or
          ``"30 and over"`` (629);
        - ``credit``: ``"good"`` (700) or ``"bad"`` (300);
        - ``good_credit``: 1 for good, 0 for bad.

    Notes
    -----
    The cost matrix published with the data (a bad applicant classed as good
    costs 5, a good one classed as bad costs 1) is not applied here.
    Source: Hofmann, H. (1994). Statlog (German Credit Data). UCI Machine
    Learning Repository, https://doi.org/10.24432/C5NC77, licence CC BY 4.0.

    Examples
    --------
    >>> df = load_german_credit()
    >>> len(df), int((df["age"] < 30).sum()), int(df["good_credit"].sum())
    (1000, 371, 700)
    >>> df["age_group"].value_counts().to_dict()
    {'30 and over': 629, 'under 30': 371}
    """
    with _data_path("german_credit.csv").open("rb") as fh:
        raw = pd.read_csv(fh)
    df = raw[_GERMAN_ATTRIBUTES].copy()
    if decode:
        for col, mapping in GERMAN_CREDIT_CODES.items():
            df[col] = df[col].map(mapping)
    status = raw["personal_status_sex"].map(GERMAN_CREDIT_CODES["personal_status_sex"])
    df["sex"] = status.str.split(":").str[0]
    df["age_group"] = np.where(df["age"] < 30, "under 30", "30 and over")
    df["credit"] = raw["credit"].map({1: "good", 2: "bad"})
    df["good_credit"] = (raw["credit"] == 1).astype(np.int64)
    if as_frame:
        return df
    return df[_GERMAN_ATTRIBUTES].copy(), df["good_credit"].copy()


def load_compas(*, filtered: bool = False) -> pd.DataFrame:
    """Load ProPublica's COMPAS two-year recidivism data (7,214 defendants), bundled.

    Parameters
    ----------
    filtered : bool, default False
        Apply ProPublica's own filter (charge within 30 days of the screening,
        a known recidivism outcome, no ordinary traffic offence, a score):
        6,172 rows remain.

    Returns
    -------
    pandas.DataFrame
        One row per defendant with columns ``id``, ``sex``, ``age``, ``age_cat``
        (``"Less than 25"``, ``"25 - 45"``, ``"Greater than 45"``), ``race``,
        ``juv_fel_count``, ``juv_misd_count``, ``juv_other_count``,
        ``priors_count``, ``days_b_screening_arrest``, ``c_charge_degree``
        (``"F"`` felony, ``"M"`` misdemeanour), ``is_recid``, ``decile_score``
        (1-10), ``score_text`` (``"Low"``, ``"Medium"``, ``"High"``),
        ``two_year_recid`` (1 if re-arrested within two years: 3,251 of
        7,214) and the derived ``predicted_recid`` (1 when ``score_text`` is
        Medium or High, ProPublica's binarisation of the score), so the score
        can be evaluated as a classifier with ``y_true="two_year_recid"``,
        ``y_pred="predicted_recid"``.

    Notes
    -----
    Source: Angwin, J., Larson, J., Mattu, S. and Kirchner, L. (2016), "Machine
    Bias", ProPublica, data from the compas-analysis repository
    (``compas-scores-two-years.csv``), reduced to the columns above. See
    ``bayeseval/data/README.md`` for the terms.

    Examples
    --------
    >>> df = load_compas()
    >>> len(df), int(df["two_year_recid"].sum())
    (7214, 3251)
    >>> len(load_compas(filtered=True))
    6172
    """
    with _data_path("compas.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip")
    if filtered:
        keep = (
            df["days_b_screening_arrest"].between(-30, 30)
            & (df["is_recid"] != -1)
            & (df["c_charge_degree"] != "O")
            & df["score_text"].notna()
        )
        df = df.loc[keep].reset_index(drop=True)
    df["predicted_recid"] = df["score_text"].isin(["Medium", "High"]).astype(np.int64)
    return df


# -- synthetic data -----------------------------------------------------------------------


def _strata_index(n_strata: int, strata: Sequence[Hashable] | None) -> pd.Index:
    if strata is None:
        return pd.Index([f"s{k + 1}" for k in range(n_strata)], name="stratum")
    index = pd.Index(list(strata), name="stratum")
    if len(index) != n_strata:
        raise ValueError(f"strata has {len(index)} labels but n_strata is {n_strata}")
    return index


def _true_rates(
    rates: Any, n_strata: int, mean_rate: float, concentration: float, rng: np.random.Generator
) -> np.ndarray:
    if rates is None:
        check_probability(mean_rate, "mean_rate")
        if not 0 < mean_rate < 1:
            raise ValueError(f"mean_rate must be strictly between 0 and 1, got {mean_rate!r}")
        if not concentration > 0:
            raise ValueError(f"concentration must be positive, got {concentration!r}")
        return rng.beta(mean_rate * concentration, (1 - mean_rate) * concentration, size=n_strata)
    r = np.broadcast_to(np.asarray(rates, dtype=float), (n_strata,)).copy()
    if np.any((r < 0) | (r > 1)) or np.any(np.isnan(r)):
        raise ValueError(f"rates must lie in [0, 1], got {np.asarray(rates).tolist()!r}")
    return r


def _shares(shares: Any, n_strata: int, name: str) -> np.ndarray:
    if shares is None:
        return np.full(n_strata, 1.0 / n_strata)
    w = np.asarray(shares, dtype=float)
    if w.shape != (n_strata,) or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(f"{name} must be {n_strata} non-negative shares summing to 1, got {w.tolist()!r}")
    return w


@fill_doc()
def make_strata(
    n_strata: int = 8,
    *,
    trials: int | Sequence[int] = 100,
    rates: float | Sequence[float] | None = None,
    mean_rate: float = 0.1,
    concentration: float = 50.0,
    weights: Sequence[float] | None = None,
    strata: Sequence[Hashable] | None = None,
    random_seed: int | np.random.Generator | None = None,
) -> tuple[Counts, pd.Series]:
    """Simulate successes and trials per stratum from known rates.

    Parameters
    ----------
    n_strata : int, default 8
        Number of strata K.
    trials : int or sequence of int, default 100
        Trials per stratum (one number for all, or K numbers).
    rates : float or sequence of float, optional
        True rates. By default they are drawn from
        ``Beta(mean_rate * concentration, (1 - mean_rate) * concentration)``,
        the beta-binomial model of the hierarchical engine (Gelman et al.,
        *Bayesian Data Analysis*, 3rd ed., section 5.3).
    mean_rate, concentration : float
        Mean ``mu`` and concentration ``kappa`` of that Beta distribution.
    weights : sequence of float, optional
        Population shares attached to the Counts (summing to 1).
    strata : sequence, optional
        Stratum labels; default ``"s1".."sK"``.
    {random_seed}

    Returns
    -------
    counts : Counts
        ``successes_k ~ Binomial(trials_k, rate_k)``.
    rates : pandas.Series
        The true rates, indexed like ``counts``.

    Examples
    --------
    >>> counts, true = make_strata(3, trials=[50, 100, 200], rates=[0.1, 0.2, 0.3], random_seed=1)
    >>> counts.trials.tolist(), true.tolist()
    ([50, 100, 200], [0.1, 0.2, 0.3])
    """
    check_positive_int(n_strata, "n_strata")
    rng = make_rng(random_seed)
    index = _strata_index(n_strata, strata)
    n = np.broadcast_to(np.asarray(trials), (n_strata,)).astype(np.int64)
    if np.any(n < 0):
        raise ValueError(f"trials must be non-negative, got {np.asarray(trials).tolist()!r}")
    r = _true_rates(rates, n_strata, mean_rate, concentration, rng)
    s = rng.binomial(n, r)
    w = None if weights is None else pd.Series(_shares(weights, n_strata, "weights"), index=index)
    counts = Counts(pd.Series(s, index=index), pd.Series(n, index=index), metric="error_rate", weights=w)
    return counts, pd.Series(r, index=index, name="rate")


@fill_doc()
def make_pool(
    n_rows: int = 10_000,
    n_strata: int = 8,
    *,
    rates: float | Sequence[float] | None = None,
    mean_rate: float = 0.1,
    concentration: float = 50.0,
    weights: Sequence[float] | None = None,
    positive_share: float = 0.3,
    sharpness: float = 20.0,
    strata: Sequence[Hashable] | None = None,
    random_seed: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Simulate a pool of classifier predictions with stratum keys and known error rates.

    Each row belongs to a stratum (drawn with probabilities ``weights``), has a
    true label ``y_true`` (positive with probability ``positive_share``), a
    per-row error probability ``p_i ~ Beta(r_k * sharpness, (1 - r_k) * sharpness)``
    around its stratum's error rate ``r_k``, and a prediction that is wrong with
    probability ``p_i``. The column ``confidence = 1 - p_i`` is therefore a
    calibrated probability that the prediction is right (a prior guess of the
    error rate before labelling), and each stratum's error rate
    is exactly ``r_k`` in expectation.

    Parameters
    ----------
    n_rows : int, default 10_000
        Rows in the pool.
    n_strata : int, default 8
        Number of strata K.
    rates : float or sequence of float, optional
        True error rates per stratum; drawn from
        ``Beta(mean_rate * concentration, (1 - mean_rate) * concentration)`` if omitted.
    mean_rate, concentration : float
        Parameters of that Beta distribution.
    weights : sequence of float, optional
        Population shares of the strata (default equal).
    positive_share : float, default 0.3
        Probability that a row's true label is 1.
    sharpness : float, default 20
        Concentration of the per-row error probabilities around the stratum rate
        (larger: the confidence varies less within a stratum).
    strata : sequence, optional
        Stratum labels; default ``"s1".."sK"``.
    {random_seed}

    Returns
    -------
    pandas.DataFrame
        Columns ``row_id``, ``stratum``, ``y_true``, ``y_pred``, ``confidence``
        and ``error`` (1 when ``y_pred != y_true``). ``df.attrs["rates"]`` holds
        the true error rates and ``df.attrs["weights"]`` the population shares, both as dicts keyed by stratum.

    Examples
    --------
    >>> pool = make_pool(2_000, 4, rates=[0.05, 0.1, 0.2, 0.4], random_seed=0)
    >>> sorted(pool.columns)
    ['confidence', 'error', 'row_id', 'stratum', 'y_pred', 'y_true']
    >>> pool.attrs["rates"]["s4"]
    0.4
    """
    check_positive_int(n_rows, "n_rows")
    check_positive_int(n_strata, "n_strata")
    check_probability(positive_share, "positive_share")
    if not sharpness > 0:
        raise ValueError(f"sharpness must be positive, got {sharpness!r}")
    rng = make_rng(random_seed)
    index = _strata_index(n_strata, strata)
    r = _true_rates(rates, n_strata, mean_rate, concentration, rng)
    w = _shares(weights, n_strata, "weights")
    k = rng.choice(n_strata, size=n_rows, p=w)
    p = _row_error_probability(r[k], sharpness, rng)
    df = _pool_rows(k, p, index, positive_share, rng)
    df.attrs["rates"] = {key: float(v) for key, v in zip(index, r, strict=True)}
    df.attrs["weights"] = {key: float(v) for key, v in zip(index, w, strict=True)}
    return df


def _row_error_probability(rk: np.ndarray, sharpness: float, rng: np.random.Generator) -> np.ndarray:
    """Per-row error probability ``Beta(r_k * sharpness, (1 - r_k) * sharpness)`` (``r_k`` at 0 or 1)."""
    inner = (rk > 0) & (rk < 1)
    p = rk.copy()
    p[inner] = rng.beta(rk[inner] * sharpness, (1 - rk[inner]) * sharpness)
    return p


def _pool_rows(
    k: np.ndarray, p: np.ndarray, index: pd.Index, positive_share: float, rng: np.random.Generator
) -> pd.DataFrame:
    """The pool's rows: stratum ``index[k]``, true label, a prediction wrong with probability ``p``."""
    n_rows = len(k)
    error = rng.random(n_rows) < p
    y_true = (rng.random(n_rows) < positive_share).astype(np.int64)
    y_pred = np.where(error, 1 - y_true, y_true)
    labels = np.asarray(index, dtype=object)[k]
    return pd.DataFrame(
        {
            "row_id": np.arange(n_rows, dtype=np.int64),
            "stratum": pd.Categorical(labels, categories=list(index)),
            "y_true": y_true,
            "y_pred": y_pred,
            "confidence": 1.0 - p,
            "error": error.astype(np.int64),
        }
    )


@fill_doc()
def make_fraud_scenario(
    n_rows: int = 1_000_000,
    share: float = 0.005,
    n_groups: int = 8,
    *,
    random_seed: int | np.random.Generator | None = None,
    recall_a: float | Sequence[float] | None = None,
    recall_b: float | Sequence[float] | None = None,
    fpr: float = 0.01,
    correlation: float = 0.95,
    group_shares: Sequence[float] | None = None,
) -> pd.DataFrame:
    """Simulate a fraud-detection scenario: rare positives, subgroups, two models.

    ``n_rows`` rows fall into ``n_groups`` subgroups (equal shares by default);
    each row is positive (fraud) with probability ``share``. Two classifiers
    ``a`` and ``b`` flag rows: on positives model ``a`` has recall
    ``recall_a[g]`` and model ``b`` recall ``recall_b[g]`` in group ``g``; on
    negatives both have false positive rate ``fpr``. The two models' decisions
    on the same row are dependent (both tend to miss the same hard cases):
    they threshold a pair of standard normal scores with correlation
    ``correlation`` (a Gaussian copula), which keeps each model's recall
    exactly at its stated value while making paired comparisons sharper than
    two independent intervals.

    Parameters
    ----------
    n_rows : int, default 1_000_000
        Number of rows.
    share : float, default 0.005
        Probability that a row is positive.
    n_groups : int, default 8
        Number of subgroups.
    {random_seed}
    recall_a, recall_b : float or sequence of float, optional
        True recall per group of the two models. Defaults: model ``a`` has
        recall 0.70 in every group (95% half-width about 8% at 125 positives)
        and model ``b`` 0.67 (a gap of 3 points).
    fpr : float, default 0.01
        False positive rate of both models.
    correlation : float, default 0.95
        Correlation of the two models' latent scores, in [-1, 1]. The default
        makes the two models disagree on about 9% of positives (6.2% caught
        only by ``a``, 3.2% only by ``b`` at recalls 0.70 / 0.67), so scoring
        both models on the same rows makes their comparison sharper
        (docs/validation.md, section 12j).
    group_shares : sequence of float, optional
        Population shares of the groups (default equal).

    Returns
    -------
    pandas.DataFrame
        Columns ``group`` (categorical ``"g1".."gK"``), ``y_true``, ``pred_a``
        and ``pred_b`` (int8 0/1). ``df.attrs`` holds the truth: ``recall_a``
        and ``recall_b`` (dicts keyed by group), ``share``, ``fpr``,
        ``correlation`` and ``group_shares``.

    Examples
    --------
    >>> df = make_fraud_scenario(200_000, random_seed=0)
    >>> df.shape, sorted(df.attrs["recall_a"])[:2]
    ((200000, 4), ['g1', 'g2'])
    >>> round(float(df["y_true"].mean()), 3)
    0.005
    """
    _check_fraud_arguments(n_rows, n_groups, share, fpr, correlation)
    rng = make_rng(random_seed)
    ra = _true_rates(0.70 if recall_a is None else recall_a, n_groups, 0.5, 1.0, rng)
    rb = _true_rates(0.67 if recall_b is None else recall_b, n_groups, 0.5, 1.0, rng)
    w = _shares(group_shares, n_groups, "group_shares")
    g = rng.choice(n_groups, size=n_rows, p=w)
    y = rng.random(n_rows) < share
    pred_a, pred_b = _copula_flags(y, g, (ra, rb), fpr, correlation, rng)
    names = [f"g{k + 1}" for k in range(n_groups)]
    df = pd.DataFrame(
        {
            "group": pd.Categorical.from_codes(g, categories=names),
            "y_true": y.astype(np.int8),
            "pred_a": pred_a.astype(np.int8),
            "pred_b": pred_b.astype(np.int8),
        }
    )
    by_group = {"recall_a": ra, "recall_b": rb, "group_shares": w}
    df.attrs.update({key: dict(zip(names, v.tolist(), strict=True)) for key, v in by_group.items()})
    df.attrs.update(share=float(share), fpr=float(fpr), correlation=float(correlation))
    return df


def _check_fraud_arguments(n_rows: Any, n_groups: Any, share: Any, fpr: Any, correlation: Any) -> None:
    """Positive counts, probabilities for ``share`` and ``fpr``, a correlation in [-1, 1]."""
    check_positive_int(n_rows, "n_rows")
    check_positive_int(n_groups, "n_groups")
    check_probability(share, "share")
    check_probability(fpr, "fpr")
    if not -1 <= correlation <= 1:
        raise ValueError(f"correlation must lie in [-1, 1], got {correlation!r}")


def _copula_flags(
    y: np.ndarray,
    g: np.ndarray,
    recalls: tuple[np.ndarray, np.ndarray],
    fpr: float,
    correlation: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Two models' flags from correlated standard normal scores (a Gaussian copula).

    Model ``j`` flags a row when ``Phi(z_j) < p``, with ``p`` its recall in the row's group on
    positives and ``fpr`` on negatives, so each model's rates are exact and the two scores have
    correlation ``correlation``.
    """
    n_rows = len(y)
    z1 = rng.standard_normal(n_rows)
    z2 = correlation * z1 + np.sqrt(1 - correlation**2) * rng.standard_normal(n_rows)
    pa = np.where(y, recalls[0][g], fpr)
    pb = np.where(y, recalls[1][g], fpr)
    return z1 < special.ndtri(pa), z2 < special.ndtri(pb)


def _paired_discordance(correlation: float, ra: float, rb: float) -> float:
    """P(model a flags, model b does not) on a positive under the Gaussian copula (for tests)."""
    za, zb = special.ndtri(ra), special.ndtri(rb)
    both = stats.multivariate_normal(cov=[[1, correlation], [correlation, 1]]).cdf([za, zb])
    return float(ra - both)
