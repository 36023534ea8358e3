"""The settings a campaign's user sets: each one's name, default and one-line help, in one table.

:class:`~bayeseval.campaign.CampaignSpec` takes its field defaults from :data:`DEFAULTS`;
:meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and
:func:`~bayeseval.campaign.simulate` take their keyword defaults from it, and
``bayeseval campaign create`` builds its flags from :data:`FIELDS` (flag, default, help), so a
default changes here and nowhere else. The goal's own parameters (half-width, threshold,
direction, margin, tolerance) are not campaign settings but arguments of the goal objects of
:mod:`bayeseval.campaign.goals.goal`; :data:`GOAL_FIELDS` gives their defaults, the keys a campaign
file stores them under, and the command-line flags that build the goal. Plain Python: the
command line reads it without loading NumPy or pandas.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Field", "FIELDS", "DEFAULTS", "GoalField", "GOAL_FIELDS", "GOAL_DEFAULTS", "auto_batch_size"]

#: the default batch size: one label per this many pool rows, within BATCH_BOUNDS
ROWS_PER_LABEL = 400
BATCH_BOUNDS = (10, 200)


def auto_batch_size(n_rows: int) -> int:
    """The default batch size of a pool of ``n_rows`` rows: one per 400 rows, at least 10, at most 200.

    A round costs about the same whatever its size (the posterior, the allocation and, with a
    proxy, the proxy table over the whole pool), so small fixed batches make a campaign on a
    large pool (and its simulation) mostly overhead: 10 labels a round took 31 s for one
    20,000-row proxy campaign that 50 a round finished in 11 s, at the price of at most one
    batch labelled past the stop.

    Parameters
    ----------
    n_rows : int
        Rows in the pool.

    Returns
    -------
    int
        The batch size.

    Examples
    --------
    >>> auto_batch_size(1_000), auto_batch_size(20_000), auto_batch_size(1_000_000)
    (10, 50, 200)
    """
    low, high = BATCH_BOUNDS
    return int(min(max(int(n_rows) // ROWS_PER_LABEL, low), high))


class Field(NamedTuple):
    """One campaign setting.

    Attributes
    ----------
    name : str
        The :class:`~bayeseval.campaign.CampaignSpec` field.
    default : Any
        Its default (``y_pred`` has none: the spec requires it).
    help : str
        One line for the command line's ``--help``.
    flag : str or None
        The ``bayeseval campaign create`` flag, or None when the command line does not set it.
    choices : tuple or None
        The values the command line accepts, when they are a fixed list.
    """

    name: str
    default: Any
    help: str
    flag: str | None = None
    choices: tuple | None = None


#: every setting of a campaign, in the order of CampaignSpec's fields
FIELDS: tuple[Field, ...] = (
    Field("y_pred", None, "column with the predicted label (required)", "--y-pred"),
    Field("strata", (), "stratum column(s), comma separated", "--strata"),
    Field(
        "metric",
        "error_rate",
        "the metric (aliases in parentheses); several comma separated (e.g. tpr,fpr) "
        "for one campaign on every one of them",
        "--metric",
    ),
    Field("pos_label", 1, "positive class for class metrics", "--pos-label"),
    Field("level", 0.95, "level of every interval and decision, e.g. 0.95", "--level"),
    Field(
        "goal",
        "each",
        "each: every stratum's interval within --target-halfwidth (Each(0.05) by default); "
        "overall: the weighted rate's; decide: every stratum decided against --threshold; gap: the max-min gap "
        "decided against --tolerance",
        "--goal",
        ("each", "overall", "decide", "gap"),
    ),
    Field("weights", None, "population shares of the strata (goal overall)"),
    Field("rule", "expected_width", "proposal rule", "--rule"),
    Field("model", "robust", "population model", "--model", ("robust", "auto", "beta_binomial")),
    Field(
        "prior",
        "default",
        "hyperprior of the hierarchical model: bda, or the package's own (the default)",
        "--prior",
        ("default", "bda"),
    ),
    Field("score", None, "column with the top-class probability (informative prior)", "--score"),
    Field("score_bins", None, "N equal-count score bins, or comma-separated edges", "--score-bins"),
    Field("label_set", None, "the known labels"),
    Field(
        "batch_size",
        None,
        "rows 'propose' asks for when not told (default: scaled to the pool, one per "
        "400 rows, at least 10 and at most 200); whole units with --cluster (scaled to the units)",
        "--batch-size",
    ),
    Field("budget", None, "maximum number of labels (of units with --cluster)", "--budget"),
    Field("annotators", 1, "annotations a row needs before its label is resolved", "--annotators"),
    Field(
        "resolve",
        "majority",
        "how annotations become a label: majority (a tie stays unresolved) or annotator:NAME",
        "--resolve",
    ),
    Field("costs", None, "label cost per stratum, e.g. 'north=1,south=4' (strata not listed cost 1)", "--costs"),
    Field(
        "guarantee",
        "stratum",
        "stratum (default): every stratum's interval covers its own rate, also at stop, "
        "and decisions hold for any batch size; average: a stratum stops on its pooled interval, which covers "
        "on average over strata like these; anytime: each stratum reads, and stops on, its confidence sequence "
        "at --level, valid whenever you look (goal each, decide or gap)",
        "--guarantee",
        ("stratum", "average", "anytime"),
    ),
    Field(
        "anytime",
        False,
        "the same as --guarantee anytime: each stratum reads, and stops on, its confidence sequence at --level",
        "--anytime",
    ),
    Field(
        "proxy",
        None,
        "column with a proxy of the true label (a cheap label or a score) on every pool row: labels "
        "go to the proxy's cells by Neyman allocation and each stratum reads the proxy-assisted interval",
        "--proxy",
    ),
    Field(
        "design",
        None,
        "the sampling design (a bayeseval.Design): population 'pool' makes each stratum's rate the rate of "
        "its rows in the pool; inclusion names the labels' inclusion column; cluster names the unit column, "
        "and the campaign then samples whole units (--population, --inclusion, --cluster)",
    ),
    Field("random_seed", None, "random seed (a whole number >= 0)", "--seed"),
)

#: field name -> default
DEFAULTS: dict[str, Any] = {f.name: f.default for f in FIELDS}


class GoalField(NamedTuple):
    """One parameter of the goal objects.

    Attributes
    ----------
    name : str
        The goal's argument and attribute (``Each(halfwidth)``, ``Decide(threshold, direction, margin)``,
        ``Gap(tolerance)``).
    key : str
        The key a campaign file stores it under.
    goals : tuple of str
        The goals that take it.
    default : Any
        Its default (None for a parameter the goal requires or resolves itself).
    help : str
        One line for the command line's ``--help``.
    flag : str
        The ``bayeseval campaign create`` flag.
    required : bool
        Whether the goals that take it need it (``Decide`` a threshold, ``Gap`` a tolerance).
    choices : tuple or None
        The values the command line accepts, when they are a fixed list.
    """

    name: str
    key: str
    goals: tuple[str, ...]
    default: Any
    help: str
    flag: str
    required: bool = False
    choices: tuple | None = None


#: every parameter of the goal objects
GOAL_FIELDS: tuple[GoalField, ...] = (
    GoalField(
        "halfwidth",
        "target_halfwidth",
        ("each", "overall"),
        0.05,
        "--goal each or overall: target half-width of the interval each stratum (or the weighted rate) reads (default 0.05)",
        "--target-halfwidth",
    ),
    GoalField(
        "threshold",
        "threshold",
        ("decide",),
        None,
        "--goal decide (required): the rate's threshold, one number or 'stratum=value,...' for every stratum",
        "--threshold",
        True,
    ),
    GoalField(
        "direction",
        "direction",
        ("decide",),
        None,
        "--goal decide: a stratum meets the threshold below it or above it; when omitted, above for accuracy, "
        "recall, precision, specificity and npv, below for the others",
        "--direction",
        choices=("below", "above"),
    ),
    GoalField(
        "margin",
        "margin",
        ("decide",),
        0.0,
        "--goal decide: a stratum whose interval lies within threshold +/- margin is decided 'at the "
        "threshold' (default 0: off)",
        "--margin",
    ),
    GoalField(
        "tolerance",
        "tolerance",
        ("gap",),
        None,
        "--goal gap (required): the largest acceptable max-min gap between strata",
        "--tolerance",
        True,
    ),
)

#: goal parameter name -> default
GOAL_DEFAULTS: dict[str, Any] = {f.name: f.default for f in GOAL_FIELDS}
