"""Simulation study of the classic error-rate estimators (bayeseval.estimate.classic).

Two Gaussian classes N(0, I) and N(Delta e1, I) in d = 5 dimensions with
equal priors; the Bayes error is Phi(-Delta / 2). For LDA, QDA and 5-NN, at
design sizes 20-500 per class, each replicate draws a design set, runs
:func:`bayeseval.estimate.classic.estimate_error` and computes the true conditional
error of the classifier trained on the whole design set (closed form for LDA,
an independent test sample of 2 x 20,000 rows for QDA and k-NN).

Writes docs/classic.md (tables + explanation) and docs/img/classic_study.png.

Usage::

    .venv/bin/python benchmarks/classic_study.py [--reps 100] [--jobs 2]
"""

from __future__ import annotations

import argparse
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

D = 5
DELTA = 2.0
BAYES = float(stats.norm.cdf(-DELTA / 2))
SIZES = (20, 50, 100, 200, 500)
CLASSIFIERS = ("LDA", "QDA", "5-NN")
LOO_MAX = 50  # leave-one-out only up to this many rows per class (it equals k-fold beyond)
N_BOOT = 100
ORDER = [
    "true",
    "resubstitution",
    "holdout",
    "loo",
    "kfold",
    "bootstrap632",
    "bootstrap632plus",
    "risk_averaging",
]
ROOT = Path(__file__).resolve().parents[1]


def make_classifier(name: str):
    from sklearn.discriminant_analysis import (
        LinearDiscriminantAnalysis,
        QuadraticDiscriminantAnalysis,
    )
    from sklearn.neighbors import KNeighborsClassifier

    if name == "LDA":
        return LinearDiscriminantAnalysis()
    if name == "QDA":
        # a touch of regularisation: bootstrap samples of 20 rows per class repeat rows
        return QuadraticDiscriminantAnalysis(reg_param=0.01)
    return KNeighborsClassifier(n_neighbors=5)


def draw(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    X = rng.standard_normal((2 * m, D))
    y = np.repeat([0, 1], m)
    X[y == 1, 0] += DELTA
    return X, y


def lda_true_error(model) -> float:
    """Closed-form conditional error of a fitted linear rule w.x + b > 0 -> class 1."""
    w = model.coef_.ravel()
    b = float(model.intercept_[0])
    s = float(np.linalg.norm(w))
    m1 = np.zeros(D)
    m1[0] = DELTA
    return 0.5 * stats.norm.cdf(b / s) + 0.5 * stats.norm.cdf(-(w @ m1 + b) / s)


def one_replicate(args: tuple[str, int, int]) -> list[dict]:
    from bayeseval.estimate.classic import estimate_error

    name, m, seed = args
    warnings.simplefilter("ignore")
    rng = np.random.default_rng([seed, m, CLASSIFIERS.index(name)])
    X, y = draw(rng, m)
    clf = make_classifier(name)
    methods = [k for k in ORDER[1:] if k != "loo" or m <= LOO_MAX]
    table = estimate_error(clf, X, y, methods=methods, n_resamples=N_BOOT, random_seed=seed)
    fitted = make_classifier(name).fit(X, y)
    if name == "LDA":
        true = lda_true_error(fitted)
    else:
        Xt, yt = draw(np.random.default_rng(10_000 + seed), 20_000)
        true = float(np.mean(fitted.predict(Xt) != yt))
    out = [{"classifier": name, "m": m, "seed": seed, "method": "true", "estimate": true}]
    for row in table.itertuples():
        out.append({"classifier": name, "m": m, "seed": seed, "method": row.method, "estimate": row.estimate})
    return out


def run(reps: int, jobs: int) -> pd.DataFrame:
    tasks = [(c, m, s) for c in CLASSIFIERS for m in SIZES for s in range(reps)]
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(one_replicate, tasks, chunksize=4):
            rows.extend(part)
    return pd.DataFrame(rows)


def summarise(raw: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    g = raw.groupby(["classifier", "m", "method"])["estimate"]
    mean = g.mean().unstack("method").reindex(columns=ORDER)
    sd = g.std().unstack("method").reindex(columns=ORDER)
    return mean, sd


def plot(mean: pd.DataFrame, sd: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5), sharex=True)
    styles = {
        "true": dict(color="black", lw=2.5),
        "resubstitution": dict(color="tab:blue", marker="v"),
        "holdout": dict(color="tab:red", marker="^"),
        "loo": dict(color="tab:gray", marker="x", ls=":"),
        "kfold": dict(color="tab:purple", marker="s", ms=4),
        "bootstrap632": dict(color="tab:green", marker="o", ms=4),
        "bootstrap632plus": dict(color="tab:olive", marker="D", ms=4),
        "risk_averaging": dict(color="tab:orange", marker="*", ls="--"),
    }
    for j, clf in enumerate(CLASSIFIERS):
        mu = mean.loc[clf]
        s = sd.loc[clf]
        for meth in ORDER:
            if mu[meth].notna().any():
                axes[0, j].plot(mu.index, mu[meth], label=meth, **styles[meth])
                axes[1, j].plot(s.index, s[meth], label=meth, **styles[meth])
        axes[0, j].axhline(BAYES, color="black", ls=":", lw=1, label="Bayes error")
        axes[0, j].set_title(clf)
        axes[1, j].set_xlabel("design size per class")
        axes[1, j].set_xscale("log")
        axes[1, j].set_xticks(SIZES, [str(m) for m in SIZES])
        axes[1, j].set_xticks([], minor=True)
    axes[0, 0].set_ylabel("mean estimate")
    axes[1, 0].set_ylabel("sd over replicates")
    axes[0, 2].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"Error-rate estimators, two Gaussian classes, d={D}, Delta={DELTA} (Bayes error {BAYES:.4f})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reject_demo() -> pd.DataFrame:
    """Chow's error-reject curve of LDA (m = 500) on 20,000 fresh rows."""
    from bayeseval.estimate.classic import error_reject_curve

    rng = np.random.default_rng(2024)
    X, y = draw(rng, 500)
    model = make_classifier("LDA").fit(X, y)
    Xt, yt = draw(rng, 10_000)
    curve = error_reject_curve(
        model.predict_proba(Xt),
        yt,
        thresholds=[0.05, 0.1, 0.2, 0.3, 0.4, 0.5],
        classes=model.classes_,
    )
    return curve


def markdown(df: pd.DataFrame, digits: int = 4) -> str:
    """A pipe table without the optional tabulate dependency."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_bias(raw: pd.DataFrame) -> str:
    """Paired bias (estimate - true) per replicate: mean +/- its standard error."""
    wide = raw.pivot_table(index=["classifier", "m", "seed"], columns="method", values="estimate")
    diff = wide.drop(columns="true").sub(wide["true"], axis=0)
    g = diff.groupby(level=["classifier", "m"])
    mu, se = g.mean(), g.std() / np.sqrt(g.count())
    cols = [c for c in ORDER[1:] if c in mu.columns]
    lines = ["| classifier | m | " + " | ".join(cols) + " |", "|" + "---:|" * (len(cols) + 2)]
    for (clf, m), row in mu.iterrows():
        cells = ["-" if pd.isna(row[c]) else f"{row[c]:+.3f} ± {se.loc[(clf, m), c]:.3f}" for c in cols]
        lines.append(f"| {clf} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fmt_table(mean: pd.DataFrame, sd: pd.DataFrame, clf: str) -> str:
    mu, s = mean.loc[clf], sd.loc[clf]
    head = "| m per class | " + " | ".join(ORDER) + " |"
    sep = "|" + "---:|" * (len(ORDER) + 1)
    lines = [head, sep]
    for m in mu.index:
        cells = []
        for meth in ORDER:
            v = mu.loc[m, meth]
            cells.append("-" if pd.isna(v) else f"{v:.3f} ({s.loc[m, meth]:.3f})")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_doc(raw, mean, sd, reps, seconds, curve, path: Path) -> None:
    text = DOC_HEAD.format(D=D, DELTA=DELTA, BAYES=BAYES, reps=reps, n_boot=N_BOOT, loo=LOO_MAX)
    for clf in CLASSIFIERS:
        text += f"\n### {clf}\n\n" + fmt_table(mean, sd, clf) + "\n"
    text += "\n### Mean bias (estimate minus true conditional error) and its Monte Carlo SE\n\n" + fmt_bias(raw) + "\n"
    text += DOC_READING.format(BAYES=BAYES)
    text += "\n### Error-reject curve (LDA, 500 rows per class, 20,000 fresh rows)\n\n"
    text += markdown(curve, 4) + "\n"
    text += DOC_TAIL.format(seconds=seconds)
    path.write_text(text)


DOC_HEAD = """# Classic error-rate estimators

`bayeseval.estimate.classic` estimates the error rate of a scikit-learn classifier that
was trained on the data at hand, with or without labels (resubstitution, hold-out,
cross-validation, the .632 and .632+ bootstrap, and label-free risk averaging):

```python
from bayeseval.estimate.classic import estimate_error, risk_averaging, error_reject_curve

table = estimate_error(clf, X, y, random_seed=0)          # one row per method
prior = risk_averaging(clf.predict_proba(X_pool), strata=groups)   # label-free, per stratum
curve = error_reject_curve(clf.predict_proba(X_test), y_test)       # Chow's trade-off
```

| method | what it measures | interval |
|---|---|---|
| `resubstitution` | errors on the design data; optimistic | none (a binomial interval around a biased count would mislead) |
| `holdout` | train on 70%, count on 30%; pessimistic for the full-data classifier | Wilson |
| `loo`, `kfold` | cross-validated predictions (`cross_val_predict`, stratified folds) | Wilson, approximate (held-out predictions are not independent) |
| `bootstrap632` | .368 resubstitution + .632 leave-one-out bootstrap error Err(1) (Efron & Tibshirani 1997) | none |
| `bootstrap632plus` | .632 with weight w = .632 / (1 - .368 R), R the relative overfitting rate, gamma the no-information rate | none |
| `risk_averaging` | mean of 1 - max_k P(k given x) over unlabelled rows (or out-of-fold rows); no labels needed | normal, sd / sqrt(n) |

Risk averaging is compared with the counted out-of-fold error on the same
rows; a `CalibrationWarning` is raised when they differ by more than the
interval's z times the standard error of the (paired) difference.

## Validation study

Two Gaussian classes N(0, I) and N(Delta e1, I) in d = {D} dimensions, equal
priors, Delta = {DELTA}: the Bayes error is Phi(-Delta/2) = {BAYES:.4f}. For each
classifier and design size m per class, {reps} seeded replicates each draw a
design set, run `estimate_error` with its defaults (holdout 30%, 10 folds) and
{n_boot} bootstrap fits, and compute the true conditional error of the
classifier trained on the full design set: in closed form for LDA
(0.5 Phi(b/|w|) + 0.5 Phi(-(w.mu1 + b)/|w|) for the fitted rule w.x + b > 0),
and on an independent test sample of 40,000 rows for QDA (reg_param 0.01)
and 5-NN. Leave-one-out is run only up to m = {loo} per class (beyond that it
is indistinguishable from 10-fold and costs 2m fits per replicate).

Cells show mean (sd) over replicates; `true` is the true conditional error of
the fitted classifier. Script: `benchmarks/classic_study.py`; figure:
![classic study](img/classic_study.png)
"""

DOC_READING = """
### Reading the results

(Numbers quoted refer to the committed run.)

* **Resubstitution** is below the true conditional error in every cell, by
  0.002 (LDA, m = 500) to 0.125 (QDA, m = 20); the bias shrinks with m for
  LDA and QDA but stays near -0.06 for 5-NN, where each design row is one of
  its own five neighbours.
* **Holdout** trains on 70% of the rows. Its mean bias is positive in 10 of
  the 15 cells, but it is within about two Monte Carlo standard errors in
  most of them: its spread is the largest of all methods (sd up to 0.135),
  so 60 replicates cannot resolve a bias of a few thousandths. The test
  suite (`tests/estimate/test_classic.py`) shows the ordering clearly where the
  learning curve is steep (LDA, d = 10, 20 rows per class: holdout above
  the true error by more than 6 standard errors).
* **.632 and .632+** lie between resubstitution and holdout on average in
  nearly every cell and are close to unbiased from m = 50 on. At m = 20,
  .632+ overshoots for QDA (+0.030) and 5-NN (+0.018), above the holdout
  mean: with few rows the relative overfitting rate R is large and the
  weight w pushes the estimate toward the leave-one-out bootstrap error,
  which is itself pessimistic (each bootstrap fit sees only about 63% of
  the distinct rows). The k-fold estimator has a larger spread
  than the bootstrap estimators at small m.
* **Risk averaging** with LDA (the well-specified model: equal covariances)
  approaches the Bayes error {BAYES:.4f} as m grows (mean 0.126 at m = 20,
  0.158 at m = 500) with the smallest spread of any method, and
  needs no labels; at small m the plug-in posterior probabilities are
  overconfident and it is biased low. QDA behaves alike. For 5-NN the vote
  shares are not calibrated probabilities and the estimate stays low (-0.035
  at m = 500): risk averaging is only as good as the calibration, which is
  why `estimate_error` reports it beside a counted estimate and warns
  (`CalibrationWarning`) when they disagree.

## Error-reject trade-off

Chow's rule rejects a row when its conditional risk r(x) = 1 - max_k P(k | x)
exceeds a threshold t. With R(t) the reject rate, the probability of an
accepted error is E(t) = -int_0^t tau dR(tau) = int_0^t R(tau) dtau - t R(t)
(Chow 1970; Fukunaga & Kessell 1972), so the error of the accepted rows,
E(t) / (1 - R(t)), follows from the reject-rate curve alone, with no labels.
`error_reject_curve` reports it beside the counted error of accepted rows
when labels are given; `plot_error_reject(curve, ax=None)` draws both.
"""

DOC_TAIL = """
The label-free column tracks the counted one and sits slightly below it:
this particular LDA fit (1,000 rows) has slightly overconfident probabilities
(its risk average is 0.148 against a counted 0.157; across the study, risk
averaging at m = 500 has sd 0.012 around a mean of 0.158).
At t = 0.5 (nothing rejected for two classes) it is the risk-averaging
estimate.

## References

* Efron, B. & Tibshirani, R. (1997). Improvements on cross-validation: the
  .632+ bootstrap method. JASA 92, 548-560.
* Chow, C. K. (1970). On optimum recognition error and reject tradeoff. IEEE
  Trans. Information Theory 16, 41-46.
* Fukunaga, K. & Kessell, D. L. (1972). Application of optimum error-reject
  functions. IEEE Trans. Information Theory 18, 814-817.
* Fukunaga, K. (1990). Introduction to Statistical Pattern Recognition, 2nd
  ed., chapter 5.

_Study run time: {seconds:.0f} s wall clock (2 worker processes on a shared, heavily loaded
2-core machine; about 10 minutes of CPU)._
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--raw", type=Path, default=None, help="reuse a saved raw CSV")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.raw is not None and args.raw.exists():
        raw = pd.read_csv(args.raw)
        seconds = float(raw["run_seconds"].iloc[0])
        args.reps = int(raw["seed"].nunique())
    else:
        raw = run(args.reps, args.jobs)
        seconds = time.perf_counter() - t0
        raw["run_seconds"] = seconds
        if args.raw is not None:
            raw.to_csv(args.raw, index=False)
    mean, sd = summarise(raw)
    print(mean.round(4).to_string())
    print(f"{seconds:.1f} s")
    plot(mean, sd, ROOT / "docs" / "img" / "classic_study.png")
    curve = reject_demo()
    write_doc(raw, mean, sd, args.reps, seconds, curve, ROOT / "docs" / "classic.md")


if __name__ == "__main__":
    main()
