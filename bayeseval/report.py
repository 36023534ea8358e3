"""One report object for an evaluation: per-stratum table, overall rates, checks, warnings.

:func:`evaluate` goes from a predictions frame to a :class:`Report`:
tabulate (rows -> successes/trials per stratum), frequentist Wilson intervals,
the pooled hierarchical posterior, the overall rate unweighted and reweighted
by population shares, model checks, and plain-English warnings. A Report
renders as HTML in Jupyter, as text in a terminal, and converts to a tidy
DataFrame, an xarray Dataset, a JSON-ready dict, HTML or Markdown files.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayeseval._validation import check_level
from bayeseval._warnings import BayesevalWarning, ConvergenceWarning
from bayeseval.counts import Counts, stratum_labels, tabulate
from bayeseval.intervals import proportion_ci
from bayeseval.metrics import Metric, get_metric

__all__ = ["Report", "evaluate"]

# composition check: a stratum's sample share differs from its population share by more
# than this (absolute) or by a factor beyond 1.5 either way
_SHARE_TOL = 0.05
_SHARE_RATIO = 1.5

_TABLE_COLUMNS = [
    "successes",
    "trials",
    "rate",
    "lower",
    "upper",
    "halfwidth",
    "post_mean",
    "post_lower",
    "post_upper",
    "shrinkage",
    "sample_share",
    "weight",
    "ppc_p",
    "extra_needed",
    "flags",
]

# the HTML rendering embeds a forest plot only up to this many strata
_MAX_PLOT_STRATA = 60

_COLUMN_DOC = {
    "successes": "successes (e.g. errors) in the stratum",
    "trials": "trials (rows counted by the metric)",
    "rate": "raw rate successes / trials",
    "lower": "Wilson interval, lower bound",
    "upper": "Wilson interval, upper bound",
    "halfwidth": "half the Wilson interval's width",
    "post_mean": "pooled (hierarchical) posterior mean",
    "post_lower": "pooled posterior credible interval, lower bound",
    "post_upper": "pooled posterior credible interval, upper bound",
    "shrinkage": "share of the way from the raw rate to the pooled mean the posterior moved",
    "sample_share": "the stratum's share of the test set's trials",
    "weight": "population share (given weights)",
    "ppc_p": "posterior predictive p-value of the stratum's count",
    "extra_needed": "more labels needed for the target half-width (at the observed rate)",
    "flags": "short flags: empty, rate 0, rate 1, too wide, model check",
}


@dataclass
class Report:
    """The result of :func:`evaluate`: tables, checks and warnings for one evaluation.

    Attributes
    ----------
    table : pandas.DataFrame
        Indexed by stratum. Columns ``successes``, ``trials``, ``rate``, ``lower``,
        ``upper`` (Wilson interval), ``halfwidth``, ``post_mean``, ``post_lower``,
        ``post_upper`` (pooled posterior, equal-tailed credible interval),
        ``shrinkage``, ``sample_share``, ``weight`` (population share, NaN
        without weights), ``ppc_p`` (posterior predictive p-value), ``extra_needed``
        (labels still needed for ``target_halfwidth``; 0 when met, NaN without a
        target) and ``flags`` (comma-separated short flags).
    overall : pandas.DataFrame
        Indexed by ``estimand``: ``unweighted`` (the pooled rate of the test set,
        Wilson interval: the rate at the *test set's composition*) and, with
        weights, ``reweighted`` (sum of population share x stratum rate with its
        normal interval, :func:`~bayeseval.stratified_risk`) and
        ``posterior_weighted`` (the same quantity under the pooled posterior).
        Columns ``estimate``, ``lower``, ``upper``, ``se``.
    checks : pandas.DataFrame
        Model-check verdicts, one row per check: ``statistic``, ``p_value``, ``verdict``.
    warnings : list of str
        Plain-English warnings (also in every rendering).
    notes : list of str
        Plain-English notes that are not warnings (e.g. which number is the
        population estimate).
    metric, level, engine, target_halfwidth
        The settings used.
    counts : Counts
        The tabulated counts.
    posterior : Posterior or None
        The pooled model (None if it could not be fitted; the reason is in ``warnings``).
    stratified : StratifiedRisk or None
        The reweighted estimate, when weights were given.

    Examples
    --------
    >>> from bayeseval.datasets import make_pool
    >>> pool = make_pool(3_000, 4, rates=[0.05, 0.1, 0.2, 0.3], random_seed=0)
    >>> rep = evaluate(pool, y_true="y_true", y_pred="y_pred", strata="stratum", random_seed=0)
    >>> rep.table.index.tolist()
    ['s1', 's2', 's3', 's4']
    >>> "unweighted" in rep.overall.index
    True
    """

    table: pd.DataFrame
    overall: pd.DataFrame
    checks: pd.DataFrame
    warnings: list[str]
    notes: list[str]
    metric: str
    level: float
    engine: str
    counts: Counts
    target_halfwidth: float | None = None
    posterior: Any = None
    stratified: Any = None
    title: str = field(default="")

    # -- conversions ---------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """The per-stratum table as a tidy DataFrame: one row per stratum, stratum as column(s).

        Examples
        --------
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(3, random_seed=0)
        >>> evaluate(counts, random_seed=0).to_frame().columns[:3].tolist()
        ['stratum', 'successes', 'trials']
        """
        return self.table.reset_index()

    def to_xarray(self) -> Any:
        """An ``xarray.Dataset`` of the table over dimension ``stratum``; overall rates as attrs.

        Examples
        --------
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(3, random_seed=0)
        >>> ds = evaluate(counts, random_seed=0).to_xarray()
        >>> ds["rate"].dims
        ('stratum',)
        """
        import xarray as xr

        labels = stratum_labels(self.table.index)
        data = {}
        for col in self.table.columns:
            values = self.table[col]
            if col == "flags":
                values = values.astype(str)
            data[col] = ("stratum", values.to_numpy())
        ds = xr.Dataset(data, coords={"stratum": labels})
        if isinstance(self.table.index, pd.MultiIndex):
            for i, name in enumerate(self.table.index.names):
                ds = ds.assign_coords(
                    {str(name or f"level_{i}"): ("stratum", self.table.index.get_level_values(i))}
                )
        ds.attrs.update(
            metric=self.metric,
            level=self.level,
            engine=self.engine,
            warnings=json.dumps(self.warnings),
        )
        for est, row in self.overall.iterrows():
            for col, val in row.items():
                ds.attrs[f"{est}_{col}"] = float(val)
        return ds

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes None): settings, strata, overall, checks, warnings.

        Examples
        --------
        >>> import json
        >>> from bayeseval.datasets import make_strata
        >>> counts, _ = make_strata(2, random_seed=0)
        >>> d = evaluate(counts, random_seed=0).to_dict()
        >>> sorted(d)[:4], json.loads(json.dumps(d))["metric"]
        (['checks', 'engine', 'level', 'metric'], 'error_rate')
        """
        strata = []
        for key, row in self.table.iterrows():
            rec: dict[str, Any] = {"stratum": _json_key(key)}
            rec.update({col: _json_value(val) for col, val in row.items()})
            strata.append(rec)
        overall = {
            str(est): {col: _json_value(val) for col, val in row.items()}
            for est, row in self.overall.iterrows()
        }
        checks = [
            {"check": str(name), **{c: _json_value(v) for c, v in row.items()}}
            for name, row in self.checks.iterrows()
        ]
        return {
            "metric": self.metric,
            "level": self.level,
            "engine": self.engine,
            "target_halfwidth": self.target_halfwidth,
            "population_estimate": "reweighted" if "reweighted" in self.overall.index else None,
            "strata": strata,
            "overall": overall,
            "checks": checks,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }

    # -- rendering -------------------------------------------------------------------------------
    def _display_table(self) -> pd.DataFrame:
        t = self.table.copy()
        t.index = pd.Index(stratum_labels(t.index), name="stratum")
        if t["weight"].isna().all():
            t = t.drop(columns="weight")
        if t["extra_needed"].isna().all():
            t = t.drop(columns="extra_needed")
        if t["ppc_p"].isna().all():
            t = t.drop(columns="ppc_p")
        return t

    @staticmethod
    def _fmt(col: str, val: Any) -> str:
        if val is None or (isinstance(val, float) and math.isnan(val)):
            return ""
        if col in ("successes", "trials", "extra_needed"):
            return f"{int(val):d}"
        if col == "flags":
            return str(val)
        return f"{float(val):.4f}"

    def _header(self) -> list[str]:
        pct = f"{100 * self.level:g}%"
        lines = [
            self.title or f"bayeseval report: {self.metric}",
            f"{len(self.table)} strata, {int(self.table['trials'].sum())} trials, "
            f"{pct} intervals (Wilson for raw rates; pooled posterior from the {self.engine} "
            "engine)",
        ]
        if self.target_halfwidth is not None:
            lines.append(f"target half-width: {self.target_halfwidth:g}")
        return lines

    def _overall_lines(self) -> list[str]:
        names = {
            "unweighted": "unweighted (test-set composition)",
            "reweighted": "reweighted by population shares  <- population estimate",
            "posterior_weighted": "pooled posterior, population-weighted",
        }
        out = []
        for est, row in self.overall.iterrows():
            out.append(
                f"  {row['estimate']:.4f}  [{row['lower']:.4f}, {row['upper']:.4f}]  "
                f"{names.get(str(est), str(est))}"
            )
        return out

    def __str__(self) -> str:
        t = self._display_table()
        body = t.apply(lambda col: col.map(lambda v, c=col.name: self._fmt(c, v)))
        lines = self._header() + ["", body.to_string(), "", "Overall rate:"]
        lines += self._overall_lines()
        if len(self.checks):
            lines += ["", "Model checks:"]
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f" (smallest p = {row['p_value']:.3f})" \
                    if name == "ppc_counts" else f" (p = {row['p_value']:.3f})"
                lines.append(f"  {name}: {row['verdict']}{p}")
        if self.notes:
            lines += ["", "Notes:"] + [f"  - {n}" for n in self.notes]
        if self.warnings:
            lines += ["", "Warnings:"] + [f"  ! {w}" for w in self.warnings]
        else:
            lines += ["", "No warnings."]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<Report metric={self.metric!r} strata={len(self.table)} "
            f"trials={int(self.table['trials'].sum())} warnings={len(self.warnings)}>"
        )

    def to_markdown(self) -> str:
        """The report as Markdown: header, per-stratum table, overall rates, checks, warnings."""
        t = self._display_table()
        cols = ["stratum"] + list(t.columns)
        out = [f"# {self._header()[0]}", ""] + [f"{h}  " for h in self._header()[1:]] + [""]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join("---" if c in ("stratum", "flags") else "---:" for c in cols) + "|")
        for key, row in t.iterrows():
            cells = [_md_escape(str(key))] + [
                _md_escape(self._fmt(c, row[c])) for c in t.columns
            ]
            out.append("| " + " | ".join(cells) + " |")
        out += ["", "## Overall rate", "", "| estimand | estimate | lower | upper |", "|---|---:|---:|---:|"]
        for est, row in self.overall.iterrows():
            out.append(
                f"| {est} | {row['estimate']:.4f} | {row['lower']:.4f} | {row['upper']:.4f} |"
            )
        if len(self.checks):
            out += ["", "## Model checks", "", "| check | p-value | verdict |", "|---|---:|---|"]
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f"{row['p_value']:.3f}"
                out.append(f"| {name} | {p} | {_md_escape(str(row['verdict']))} |")
        if self.notes:
            out += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        out += ["", "## Warnings", ""]
        out += [f"- {w}" for w in self.warnings] if self.warnings else ["No warnings."]
        return "\n".join(out) + "\n"

    def forest_png(self, *, dpi: int = 100) -> bytes:
        """A PNG of the forest plot (raw rate with Wilson interval beside the pooled posterior)."""
        from matplotlib.figure import Figure

        from bayeseval import plots

        height = max(2.5, 0.45 * len(self.table) + 1.2)
        fig = Figure(figsize=(7, height))
        ax = fig.subplots()
        plots.forest(self, ax=ax)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        return buf.getvalue()

    def to_html(self, *, plot: bool = True) -> str:
        """Self-contained HTML: style, table, overall rates, checks, warnings, optional plot.

        The forest plot (a base64 PNG) is embedded when ``plot`` is true and there are at
        most 60 strata.
        """
        t = self._display_table()
        esc = html.escape
        parts = [
            "<div class='bayeseval-report'>",
            "<style>.bayeseval-report table{border-collapse:collapse;margin:4px 0 10px 0}"
            ".bayeseval-report th,.bayeseval-report td{padding:2px 8px;border-bottom:1px solid #ddd;"
            "text-align:right}.bayeseval-report td.s{text-align:left}"
            ".bayeseval-report .warn{color:#8a3b00}.bayeseval-report tr.flag td{background:#fff4e5}"
            "</style>",
            f"<h3>{esc(self._header()[0])}</h3>",
            "<p>" + "<br>".join(esc(h) for h in self._header()[1:]) + "</p>",
            "<table><thead><tr><th>stratum</th>"
            + "".join(f"<th title='{esc(_COLUMN_DOC.get(c, c))}'>{esc(c)}</th>" for c in t.columns)
            + "</tr></thead><tbody>",
        ]
        for key, row in t.iterrows():
            cls = " class='flag'" if row.get("flags") else ""
            cells = "".join(
                f"<td{' class=s' if c == 'flags' else ''}>{esc(self._fmt(c, row[c]))}</td>"
                for c in t.columns
            )
            parts.append(f"<tr{cls}><td class='s'>{esc(str(key))}</td>{cells}</tr>")
        parts.append("</tbody></table>")
        parts.append(
            "<b>Overall rate</b><table><thead><tr><th>estimand</th><th>estimate</th>"
            "<th>lower</th><th>upper</th></tr></thead><tbody>"
        )
        for est, row in self.overall.iterrows():
            mark = " (population estimate)" if est == "reweighted" else ""
            parts.append(
                f"<tr><td class='s'>{esc(str(est))}{mark}</td><td>{row['estimate']:.4f}</td>"
                f"<td>{row['lower']:.4f}</td><td>{row['upper']:.4f}</td></tr>"
            )
        parts.append("</tbody></table>")
        if len(self.checks):
            parts.append("<b>Model checks</b><ul>")
            for name, row in self.checks.iterrows():
                p = "" if pd.isna(row["p_value"]) else f" (p = {row['p_value']:.3f})"
                parts.append(f"<li>{esc(str(name))}: {esc(str(row['verdict']))}{p}</li>")
            parts.append("</ul>")
        if self.notes:
            parts.append("<b>Notes</b><ul>" + "".join(f"<li>{esc(n)}</li>" for n in self.notes) + "</ul>")
        if self.warnings:
            parts.append(
                "<b class='warn'>Warnings</b><ul class='warn'>"
                + "".join(f"<li>{esc(w)}</li>" for w in self.warnings)
                + "</ul>"
            )
        else:
            parts.append("<p>No warnings.</p>")
        if plot and len(self.table) > _MAX_PLOT_STRATA:
            parts.append(
                f"<p>(forest plot omitted: {len(self.table)} strata are more than "
                f"{_MAX_PLOT_STRATA} rows can show; plot a subset with bayeseval.plots.forest)</p>"
            )
        elif plot:
            try:
                png = base64.b64encode(self.forest_png()).decode("ascii")
                parts.append(
                    f"<img alt='forest plot of the strata' src='data:image/png;base64,{png}'/>"
                )
            except Exception as exc:  # a plot failure must not hide the report
                parts.append(f"<p class='warn'>(forest plot unavailable: {esc(str(exc))})</p>")
        parts.append("</div>")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return self.to_html(plot=True)

    def save(self, path: str | PathLike[str], *, plot: bool = True) -> Path:
        """Write the report to ``path``: ``.html``/``.htm`` or ``.md``/``.markdown`` by suffix.

        Returns
        -------
        pathlib.Path
            The path written.
        """
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix in (".html", ".htm"):
            text = "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>bayeseval report</title>" \
                "</head><body>\n" + self.to_html(plot=plot) + "\n</body></html>\n"
        elif suffix in (".md", ".markdown"):
            text = self.to_markdown()
        else:
            raise ValueError(
                f"path must end in .html, .htm, .md or .markdown, got {str(path)!r}"
            )
        p.write_text(text, encoding="utf-8")
        return p

    def plot(self, kind: str = "forest", ax: Any = None, **kwargs: Any) -> Any:
        """Plot the report (``kind="forest"`` or ``"ppc"``); returns the matplotlib Axes."""
        from bayeseval import plots

        if kind == "forest":
            return plots.forest(self, ax=ax, **kwargs)
        if kind == "ppc":
            if self.posterior is None:
                raise ValueError("kind='ppc' needs the pooled posterior, which was not fitted")
            return plots.ppc(self.posterior, ax=ax, **kwargs)
        raise ValueError(f"kind must be 'forest' or 'ppc', got {kind!r}")


def _strata(n: int) -> str:
    return f"{n} stratum" if n == 1 else f"{n} strata"


def _label(key: Any) -> str:
    return " | ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def _json_key(key: Any) -> Any:
    if isinstance(key, tuple):
        return [_json_value(k) for k in key]
    return _json_value(key)


def _json_value(val: Any) -> Any:
    if val is None:
        return None
    if isinstance(val, (np.integer,)):
        return int(val)
    if isinstance(val, (float, np.floating)):
        return None if math.isnan(float(val)) else float(val)
    if isinstance(val, (np.bool_, bool)):
        return bool(val)
    if isinstance(val, (str, int)):
        return val
    try:
        if pd.isna(val):
            return None
    except (TypeError, ValueError):
        pass
    return str(val)


def _fmt_labels(keys: Sequence[Any], limit: int = 6) -> str:
    names = [_label(k) for k in keys]
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _ppc_fallback(post: Any, level: float, random_seed: Any) -> tuple[np.ndarray, pd.DataFrame]:
    """Per-stratum two-sided predictive p-values and a dispersion check from replicated counts."""
    rep = post.sample_predictive(random_seed=random_seed)
    s = post.counts.successes.to_numpy()
    n = post.counts.trials.to_numpy()
    ge = (rep >= s[None, :]).mean(axis=0)
    le = (rep <= s[None, :]).mean(axis=0)
    p = np.minimum(1.0, 2 * np.minimum(ge, le))
    p = np.where(n > 0, p, np.nan)
    # between-stratum dispersion: chi-square of the rates around the pooled rate
    keep = n > 0

    def chi2(x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)[:, keep]
        nn = n[keep]
        pooled = x.sum(axis=1, keepdims=True) / nn.sum()
        expected = nn[None, :] * pooled
        var = expected * (1 - pooled)
        with np.errstate(invalid="ignore", divide="ignore"):
            terms = np.where(var > 0, (x - expected) ** 2 / var, 0.0)
        return terms.sum(axis=1)

    stat_obs = float(chi2(s)[0])
    stat_rep = chi2(rep)
    p_disp = float(min(1.0, 2 * min((stat_rep >= stat_obs).mean(), (stat_rep <= stat_obs).mean())))
    alpha = 1 - level
    n_flag = int(np.nansum(p < alpha))
    checks = pd.DataFrame(
        {
            "statistic": ["per-stratum counts", "between-stratum dispersion (chi-square)"],
            "p_value": [float(np.nanmin(p)) if np.isfinite(p).any() else np.nan, p_disp],
            "verdict": [
                "ok" if n_flag == 0 else f"{_strata(n_flag)} extreme under the model",
                "ok" if p_disp >= alpha else "the model does not reproduce the spread of the rates",
            ],
        },
        index=pd.Index(["ppc_counts", "ppc_dispersion"], name="check"),
    )
    return p, checks


def _model_checks(
    post: Any, level: float, random_seed: Any
) -> tuple[np.ndarray, np.ndarray, list[str], pd.DataFrame]:
    """Model-check verdicts: per-stratum p-values, flags, reasons, and a checks table.

    Uses :mod:`bayeseval.checks` (mixed and cross-validated predictive checks,
    frequentist side by side) when available, else a plain posterior predictive check.
    """
    try:
        from bayeseval.checks import compare_frequentist, posterior_predictive_check
    except ImportError:
        p, checks = _ppc_fallback(post, level, random_seed)
        return p, np.nan_to_num(p, nan=1.0) < 1 - level, [""] * len(p), checks
    res = posterior_predictive_check(post, random_seed=random_seed, level=level)
    table = res.table.reindex(post.strata)
    p = table["p_value"].to_numpy(dtype=float)
    flagged = table["flag"].fillna(False).to_numpy(dtype=bool)
    side = compare_frequentist(post, level=level, ppc=res)
    reasons = side["reason"].reindex(post.strata).fillna("").astype(str).tolist()
    n_flag = int(flagged.sum())
    k_has = int(np.isfinite(p).sum())
    threshold = (1 - level) / max(k_has, 1)
    rows = {
        "ppc_counts": (
            "per-stratum counts (cross-validated mixed predictive check)",
            float(np.nanmin(p)) if np.isfinite(p).any() else np.nan,
            f"ok: no stratum below p = {threshold:.2g} ({1 - level:g} / {k_has} strata)"
            if n_flag == 0
            else f"{_strata(n_flag)} extreme under the model (p below {threshold:.2g})",
        )
    }
    for _, g in res.global_table.iterrows():
        rows[f"ppc_{g['statistic']}"] = (
            f"{g['statistic']} of the stratum rates",
            float(g["p_value"]),
            "ok" if not bool(g["flag"]) else "outside the model's predictive range",
        )
    checks = pd.DataFrame.from_dict(rows, orient="index", columns=["statistic", "p_value", "verdict"])
    checks.index.name = "check"
    return p, flagged, reasons, checks


def _extra_needed(rate: float, trials: int, target: float, level: float) -> float:
    from bayeseval.planning import sample_size

    r = min(max(rate, 0.0), 1.0)
    need = sample_size(halfwidth=target, rate=r, level=level, method="wilson")
    return float(max(0, int(need) - int(trials)))


def evaluate(
    data: pd.DataFrame | Counts | Any,
    *,
    y_true: str | None = None,
    y_pred: str | None = None,
    strata: str | Sequence[str] | None = None,
    metric: str | Metric = "error_rate",
    weights: Mapping[Hashable, float] | pd.Series | Sequence[float] | None = None,
    engine: str = "exact",
    level: float = 0.95,
    target_halfwidth: float | None = None,
    pos_label: Any = None,
    random_seed: int | None = None,
) -> Report:
    """Evaluate a classifier per stratum with intervals, pooling, checks and warnings.

    Parameters
    ----------
    data : pandas.DataFrame, path, DuckDB relation or Counts
        One row per labelled example (see :func:`~bayeseval.tabulate`), or
        ready-made :class:`~bayeseval.Counts` (then ``y_true``/``y_pred`` are not needed).
    y_true, y_pred : str
        Columns with the true and the predicted labels.
    strata : str or list of str, optional
        Column(s) defining the strata; None gives one stratum.
    metric : str or Metric, default "error_rate"
        Any metric of :func:`~bayeseval.get_metric`.
    weights : dict, Series or sequence, optional
        Population shares of the strata (summing to 1). With them the report
        gives the reweighted overall rate (the population estimate) beside the
        unweighted one and checks the test set's composition.
    engine : {"exact", "pymc"}, default "exact"
        Engine of the pooled hierarchical model (:func:`~bayeseval.fit_hierarchical`).
    level : float, default 0.95
        Level of every interval.
    target_halfwidth : float, optional
        Wanted half-width per stratum; strata whose Wilson interval is wider get
        a warning with the number of extra labels they need
        (:func:`~bayeseval.sample_size` with ``method="wilson"`` at the observed rate).
    pos_label : optional
        Positive class for class-dependent metrics (recall, precision, ...).
    random_seed : int, optional
        Seed for the posterior draws and the predictive checks.

    Returns
    -------
    Report

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 1, 0, 1] * 20, "p": [1, 0, 0, 1, 0, 1] * 20,
    ...                    "g": ["a", "a", "a", "b", "b", "b"] * 20})
    >>> rep = evaluate(df, y_true="y", y_pred="p", strata="g", metric="error_rate",
    ...                target_halfwidth=0.05, random_seed=0)
    >>> rep.table[["successes", "trials"]].to_dict("list")
    {'successes': [20, 0], 'trials': [60, 60]}
    >>> any("rate of 0" in w for w in rep.warnings)
    True
    """
    level = check_level(level)
    if target_halfwidth is not None:
        if isinstance(target_halfwidth, bool) or not isinstance(target_halfwidth, (int, float)):
            raise TypeError(f"target_halfwidth must be a number, got {target_halfwidth!r}")
        if not 0 < target_halfwidth < 0.5:
            raise ValueError(f"target_halfwidth must be in (0, 0.5), got {target_halfwidth!r}")
        target_halfwidth = float(target_halfwidth)
    if engine not in ("exact", "pymc"):
        raise ValueError(f"engine must be 'exact' or 'pymc', got {engine!r}")

    if isinstance(data, Counts):
        counts = data if weights is None else data.with_weights(weights)
        metric_name = counts.metric or (get_metric(metric).name if metric else "rate")
    else:
        if y_true is None or y_pred is None:
            raise TypeError("y_true and y_pred (column names) are required unless data is a Counts")
        metric_name = get_metric(metric).name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayesevalWarning)
            counts = tabulate(
                data, y_true=y_true, y_pred=y_pred, strata=strata, metric=metric,
                pos_label=pos_label, weights=weights,
            )
    warn: list[str] = []
    notes: list[str] = []
    s = counts.successes
    n = counts.trials
    index = counts.strata
    has_trials = n > 0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BayesevalWarning)
        lower, upper = proportion_ci(s, n, level=level, method="wilson")
    table = pd.DataFrame(index=index)
    table["successes"] = s
    table["trials"] = n
    table["rate"] = counts.rates
    table["lower"] = np.asarray(lower, dtype=float)
    table["upper"] = np.asarray(upper, dtype=float)
    table["halfwidth"] = (table["upper"] - table["lower"]) / 2
    for col in ("post_mean", "post_lower", "post_upper", "shrinkage", "ppc_p", "extra_needed"):
        table[col] = np.nan
    table["sample_share"] = counts.sample_shares.to_numpy()
    table["weight"] = np.nan if counts.weights is None else counts.weights.to_numpy()
    flags: dict[Any, list[str]] = {k: [] for k in index}

    # -- pooled posterior -----------------------------------------------------------------------
    post = None
    checks = pd.DataFrame(
        {"statistic": pd.Series(dtype=str), "p_value": pd.Series(dtype=float),
         "verdict": pd.Series(dtype=str)}
    )
    if int(has_trials.sum()) >= 1:
        from bayeseval.models import fit_hierarchical

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", BayesevalWarning)
                post = fit_hierarchical(counts, engine=engine, random_seed=random_seed)
                summ = post.summary(level=level)
            for w in caught:
                if issubclass(w.category, ConvergenceWarning):
                    warn.append(f"The pooled model's sampler reported a problem: {w.message}")
        except Exception as exc:  # the report stays useful without the pooled model
            warn.append(f"The pooled model could not be fitted ({type(exc).__name__}: {exc}); "
                        "the table shows the frequentist columns only.")
            post = None
        if post is not None:
            table["post_mean"] = summ["mean"].to_numpy()
            table["post_lower"] = summ["lower"].to_numpy()
            table["post_upper"] = summ["upper"].to_numpy()
            table["shrinkage"] = summ["shrinkage"].to_numpy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BayesevalWarning)
                try:
                    p, model_flag, model_reason, checks = _model_checks(post, level, random_seed)
                except Exception as exc:  # keep the report; say which check was used
                    p, checks = _ppc_fallback(post, level, random_seed)
                    model_flag = np.nan_to_num(p, nan=1.0) < 1 - level
                    model_reason = [""] * len(p)
                    notes.append(
                        f"bayeseval.checks failed on these strata ({type(exc).__name__}: {exc}); "
                        "a plain posterior predictive check was used instead."
                    )
            table["ppc_p"] = p
    else:
        warn.append("No stratum has any trials: there is nothing to estimate.")

    # -- overall rates ----------------------------------------------------------------------------
    total_s, total_n = int(s.sum()), int(n.sum())
    rows = {}
    if total_n > 0:
        ulo, uhi = proportion_ci(total_s, total_n, level=level, method="wilson")
        rate = total_s / total_n
        rows["unweighted"] = [rate, ulo, uhi, math.sqrt(rate * (1 - rate) / total_n)]
    else:
        rows["unweighted"] = [np.nan] * 4
    sr = None
    if counts.weights is not None:
        from bayeseval.stratified import stratified_risk

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BayesevalWarning)
            try:
                sr = stratified_risk(counts, level=level)
            except ValueError as exc:
                warn.append(f"The reweighted rate could not be computed: {exc}")
        if sr is not None:
            rows["reweighted"] = [sr.estimate, sr.ci[0], sr.ci[1], sr.se]
        if post is not None:
            draws = np.asarray(post.weighted(counts.weights))
            a = (1 - level) / 2
            rows["posterior_weighted"] = [
                float(draws.mean()), float(np.quantile(draws, a)),
                float(np.quantile(draws, 1 - a)), float(draws.std(ddof=1)),
            ]
        notes.append(
            "The reweighted rate (population share x stratum rate, summed) is the population "
            "estimate; the unweighted rate is the rate at the test set's own composition."
        )
    else:
        notes.append(
            "No population shares were given: the overall rate is unweighted, so it estimates "
            "the rate at the test set's own composition, not necessarily the population's. "
            "Pass weights= to get the population estimate."
        )
    overall = pd.DataFrame.from_dict(
        rows, orient="index", columns=["estimate", "lower", "upper", "se"]
    )
    overall.index.name = "estimand"

    # -- warnings in plain words -------------------------------------------------------------------
    empty = list(index[~has_trials.to_numpy()])
    for k in empty:
        flags[k].append("empty")
    if empty:
        warn.append(
            f"{_strata(len(empty))} {'has' if len(empty) == 1 else 'have'} no trials for "
            f"{metric_name} and no estimate: "
            f"{_fmt_labels(empty)}."
        )
    for k in index[has_trials.to_numpy()]:
        sk, nk = int(s.loc[k]), int(n.loc[k])
        label = _label(k)
        if sk == 0 or sk == nk:
            which = "0" if sk == 0 else "1"
            flags[k].append(f"rate {which}")
            lo, hi = table.loc[k, "lower"], table.loc[k, "upper"]
            warn.append(
                f"Stratum {label!r} has a rate of {which} ({sk} of {nk}): the plug-in standard "
                f"error is 0, which is not certainty; the Wilson interval [{lo:.3f}, {hi:.3f}] "
                "is the honest range."
            )
    if target_halfwidth is not None:
        for k in index[has_trials.to_numpy()]:
            hw = float(table.loc[k, "halfwidth"])
            extra = _extra_needed(float(table.loc[k, "rate"]), int(n.loc[k]), target_halfwidth, level)
            if hw <= target_halfwidth:
                extra = 0.0
            table.loc[k, "extra_needed"] = extra
            if hw > target_halfwidth:
                flags[k].append("too wide")
        wide = table.index[(table["halfwidth"] > target_halfwidth).to_numpy()]
        for k in wide:
            label = _label(k)
            extra = int(table.loc[k, "extra_needed"])
            more = (
                f"about {extra} more labels (at its observed rate {table.loc[k, 'rate']:.3f})"
                if extra > 0
                else "more labels (the planning formula at its observed rate says it should "
                "already be close)"
            )
            warn.append(
                f"Stratum {label!r} is too small for a half-width of {target_halfwidth:g}: "
                f"{int(n.loc[k])} trials give {table.loc[k, 'halfwidth']:.3f}; it needs {more}."
            )
        for k in empty:
            table.loc[k, "extra_needed"] = _extra_needed(0.5, 0, target_halfwidth, level)
    if post is not None:
        bad = list(index[model_flag])
        for k in bad:
            flags[k].append("model check")
        if bad:
            warn.append(
                f"The pooled model finds {_strata(len(bad))} extreme under its own predictions: "
                f"{_fmt_labels(bad)}. Their pooled estimates may be pulled too far toward the "
                "others; report the raw rate beside them, or refit with model='robust'."
            )
        shrunk = [k for k, r in zip(index, model_reason, strict=True)
                  if r == "strong shrinkage of a small stratum"]
        for k in shrunk:
            flags[k].append("strong shrinkage")
        if shrunk:
            warn.append(
                f"Small strata whose pooled estimate leans heavily on the other strata: "
                f"{_fmt_labels(shrunk)}. Their credible intervals borrow certainty from the "
                "pooling assumption; the raw rate and Wilson interval are what their own data say."
            )
        disagree = [k for k, r in zip(index, model_reason, strict=True)
                    if r == "posterior and frequentist estimates disagree"]
        for k in disagree:
            flags[k].append("estimates disagree")
        if disagree:
            warn.append(
                f"For {_fmt_labels(disagree)} the pooled estimate and the raw rate disagree "
                "(one lies outside the other's interval)."
            )
        glob = [c for c in checks.index if c != "ppc_counts"
                and not str(checks.loc[c, "verdict"]).startswith("ok")]
        if glob:
            warn.append(
                "The pooled model does not reproduce the spread of the stratum rates "
                f"({', '.join(c.removeprefix('ppc_') for c in glob)} check failed); treat the "
                "pooled intervals with care."
            )
    if counts.weights is not None and total_n > 0:
        share = counts.sample_shares
        w = counts.weights
        ratio = np.where(w > 0, share / w.where(w > 0, np.nan), np.inf)
        off = (np.abs(share - w) > _SHARE_TOL) | (ratio > _SHARE_RATIO) | (ratio < 1 / _SHARE_RATIO)
        if bool(np.asarray(off).any()):
            worst = (share - w).abs().idxmax()
            label = _label(worst)
            un = overall.loc["unweighted", "estimate"]
            re = overall.loc["reweighted", "estimate"] if "reweighted" in overall.index else np.nan
            warn.append(
                "The test set's composition differs from the population "
                f"(e.g. {label!r}: {share.loc[worst]:.1%} of the test set, "
                f"{w.loc[worst]:.1%} of the population), so the unweighted rate "
                f"({un:.4f}) is not a population estimate; use the reweighted rate ({re:.4f})."
            )
    table["flags"] = [", ".join(flags[k]) for k in index]
    table = table[_TABLE_COLUMNS]
    return Report(
        table=table,
        overall=overall,
        checks=checks,
        warnings=warn,
        notes=notes,
        metric=metric_name,
        level=level,
        engine=engine,
        counts=counts,
        target_halfwidth=target_halfwidth,
        posterior=post,
        stratified=sr,
    )
