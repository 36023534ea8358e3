"""The parsers of ``bayeseval campaign``: its sub-commands, their options and the option types.

:mod:`bayeseval.cli.campaign` runs the commands; this module only builds the argument parsers, so
``bayeseval campaign --help`` loads neither pandas nor the campaign package.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from bayeseval._api.metric_names import choices as metric_choices
from bayeseval.campaign.fields import FIELDS, GOAL_FIELDS
from bayeseval.cli.harness import add_harness_args
from bayeseval.cli.io import HelpFormatter as _Formatter
from bayeseval.cli.shared import add_design_args

__all__ = ["FORMATS", "add_command", "add_create_parser", "add_other_parsers", "one_line_errors"]

EXIT_OK, EXIT_BAD_INPUT, EXIT_NOTHING_TO_PROPOSE = 0, 2, 3

CSV_SUFFIXES = (".csv", ".csv.gz", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")

#: batch file formats and the file names each needs
FORMATS = {
    "csv": CSV_SUFFIXES,
    "parquet": PARQUET_SUFFIXES,
    "labelstudio": (".json",),
    "jsonl": (".jsonl",),
}


# -- option types --------------------------------------------------------------------------
def _number(cast: Callable[[str], Any], ok: Callable[[Any], bool], expected: str) -> Callable[[str], Any]:
    """An option type: ``cast(text)`` when it parses and ``ok`` holds, else a usage error."""

    def parse(text: str) -> Any:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(value):  # the range checks also refuse nan (and inf where bounded)
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_positive_int = _number(int, lambda v: v >= 1, "a whole number >= 1")
_seed = _number(int, lambda v: v >= 0, "a whole number >= 0")


def _open_unit(upper: float) -> Callable[[str], float]:
    return _number(float, lambda v: 0 < v < upper, f"a number in (0, {upper:g})")


def _score_bins(text: str) -> Any:
    if text.strip().isdigit():
        return _positive_int(text.strip())
    try:
        edges = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of bins or comma-separated increasing edges, got {text!r}"
        ) from None
    return edges


def _columns(value: str) -> list[str]:
    cols = [c.strip() for c in value.split(",") if c.strip()]
    if not cols:
        raise argparse.ArgumentTypeError(f"expected one or more column names, got {value!r}")
    return cols


def _costs(text: str) -> dict[str, float]:
    """``--costs stratum=cost,...`` as a mapping (strata named by their label text)."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.rpartition("=")
        try:
            cost = float(value)
        except ValueError:
            cost = float("nan")
        if not sep or not name.strip() or not (cost > 0 and cost < float("inf")):
            raise argparse.ArgumentTypeError(f"expected stratum=cost pairs with costs > 0, got {part!r}")
        out[name.strip()] = cost
    return out


def _metric_names(text: str) -> Any:
    """``--metric recall`` or ``--metric tpr,fpr`` (several metrics in one campaign)."""
    names = [p.strip() for p in text.split(",")]
    if any(not n for n in names):
        raise argparse.ArgumentTypeError(f"expected metric names separated by commas, got {text!r}")
    return names[0] if len(names) == 1 else names


def _threshold(text: str) -> Any:
    """``--threshold 0.1`` or ``--threshold north=0.1,south=0.15`` (strata named by their label text)."""
    try:
        return float(text)
    except ValueError:
        pass
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        name, sep, value = part.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or not name.strip() or not (0.0 < number < 1.0):
            raise argparse.ArgumentTypeError(f"expected a number in (0, 1) or stratum=value pairs, got {part!r}")
        out[name.strip()] = number
    return out


def _content_type(text: str) -> tuple[str, str]:
    col, sep, kind = text.partition("=")
    if not sep or not col.strip() or kind.strip() not in ("text", "image"):
        raise argparse.ArgumentTypeError(f"expected COLUMN=text or COLUMN=image, got {text!r}")
    return col.strip(), kind.strip()


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make ``parser`` report usage errors as one line on stderr and exit 2.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The parser to change.

    Returns
    -------
    argparse.ArgumentParser
        ``parser`` itself.

    Examples
    --------
    >>> p = one_line_errors(argparse.ArgumentParser(prog="x"))
    >>> p.error is not argparse.ArgumentParser.error
    True
    """

    def error(message: str) -> None:
        parser.exit(EXIT_BAD_INPUT, f"{parser.prog}: error: {' '.join(message.split()) or 'bad arguments'}\n")

    parser.error = error  # type: ignore[method-assign]
    return parser


def add_command(sub: Any, name: str, help_: str, description: str, example: str) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` with the options every campaign command has (``--db``, ``--json``).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``campaign`` command's sub-parsers.
    name, help_, description, example : str
        The sub-command's name, one-line help, description and example command line.

    Returns
    -------
    argparse.ArgumentParser
        The sub-command's parser, reporting usage errors on one line.

    Examples
    --------
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> p = add_command(sub, "status", "show", "Show the status.", "bayeseval campaign status --db c.db")
    >>> p.parse_args(["--db", "c.db"]).db
    'c.db'
    """
    p = sub.add_parser(
        name, help=help_, description=description, epilog=f"example:\n  {example}", formatter_class=_Formatter
    )
    p.add_argument("--db", required=True, help="campaign database" + (" file to create" if name == "create" else ""))
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return one_line_errors(p)


#: how the command line parses each setting it sets (strings otherwise)
_FIELD_TYPES: dict[str, Callable[[str], Any]] = {
    "strata": _columns,
    "metric": _metric_names,
    "halfwidth": _open_unit(0.5),
    "level": _open_unit(1.0),
    "threshold": _threshold,
    "tolerance": _open_unit(1.0),
    "margin": _number(float, lambda v: 0 <= v < 0.5, "a number in [0, 0.5)"),
    "score_bins": _score_bins,
    "budget": _positive_int,
    "batch_size": _positive_int,
    "annotators": _positive_int,
    "costs": _costs,
    "random_seed": _seed,
}


def _field_help(field: Any) -> str:
    """The flag's help: the field's, with the metric names listed for --metric."""
    if field.name == "metric":
        return f"one of {metric_choices(composite=False)}; " + field.help.split("; ", 1)[-1]
    return field.help


def add_create_parser(sub: Any) -> None:
    """Add ``campaign create`` with a flag per setting of :data:`~bayeseval.campaign.fields.FIELDS`.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``campaign`` command's sub-parsers.

    Examples
    --------
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_create_parser(sub)
    >>> args = sub.choices["create"].parse_args(["--db", "c.db", "--batch-size", "20", "--prior", "bda"])
    >>> args.batch_size, args.prior
    (20, 'bda')
    """
    p = add_command(
        sub,
        "create",
        "create a campaign from a pool file",
        "Create a campaign database from a pool of unlabelled predictions (.csv, .csv.gz or .parquet).",
        "bayeseval campaign create --pool pool.parquet --id-column id --strata region,age "
        "--y-pred pred --metric error_rate --target-halfwidth 0.05 --db camp.db --seed 1\n"
        "  bayeseval campaign create --inspect logs/model-a.eval --strata metadata.category --metric accuracy "
        "--target-halfwidth 0.1 --db camp.db",
    )
    p.add_argument("--pool", default=None, help="pool file (.csv, .csv.gz or .parquet)")
    add_harness_args(p, labels=False)
    p.add_argument(
        "--id-column",
        default=None,
        help="column holding the row id, in --pool and --labels (default: the row number, and the "
        "column 'row' of --labels)",
    )
    for field in FIELDS:
        if field.flag is not None and isinstance(field.default, bool):
            p.add_argument(field.flag, dest=field.name, action="store_true", help=_field_help(field))
        elif field.flag is not None:
            p.add_argument(
                field.flag,
                dest=field.name,
                default=field.default,
                type=_FIELD_TYPES.get(field.name),
                choices=field.choices,
                help=_field_help(field),
            )
    goals = p.add_argument_group("goal parameters", "each belongs to the goals its help names (default: the goal's)")
    for field in GOAL_FIELDS:
        goals.add_argument(
            field.flag,
            dest=field.name,
            default=None,
            type=_FIELD_TYPES.get(field.name),
            choices=field.choices,
            help=field.help,
        )
    p.add_argument(
        "--content",
        type=_columns,
        default=None,
        help="pool columns annotators see (text, image URLs), comma separated: written into every batch",
    )
    seed = p.add_argument_group(
        "labels you already have",
        "start from rows labelled before the campaign, taken as a random sample "
        "within each stratum; the campaign proposes only rows never labelled",
    )
    seed.add_argument(
        "--labels",
        default=None,
        help="file of row ids and labels, in any format 'campaign ingest' reads (.csv, .csv.gz, "
        ".parquet, a Label Studio export .json, .jsonl); ids in the --id-column column",
    )
    seed.add_argument(
        "--y-true", dest="y_true", default=None, help="column of --labels with the labels (default: label)"
    )
    seed.add_argument(
        "--from-name",
        default=None,
        help="Label Studio choice control holding the label (default: the only one, or 'label')",
    )
    add_design_args(
        p.add_argument_group("sampling design", "what each stratum's rate is, and how the --labels rows were chosen"),
        inclusion_help="column of --labels with the probability each row was chosen for labelling; labels "
        "chosen with unequal probabilities within a stratum are read as a seed cell beside the "
        "campaign's random draws (goal each, guarantee stratum only)",
        population_help="'process' (default): each stratum's interval is for the rate of the process that "
        "produced its rows; 'pool': for the rate of its rows in the pool itself (exact finite-pool "
        "interval; a stratum labelled to its last row is known exactly; goal each, guarantee stratum)",
    )


def add_other_parsers(sub: Any) -> None:
    """Add the campaign's other sub-commands (``propose``, ``ingest``, ``status``, ...).

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``campaign`` command's sub-parsers.

    Examples
    --------
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_other_parsers(sub)
    >>> sorted(sub.choices)[:3]
    ['export', 'forecast', 'history']
    """
    p = add_command(
        sub,
        "propose",
        "write the next rows to label",
        "Propose the next batch and write it with an empty label column. The file is written "
        "under a temporary name and renamed onto --out once the proposal is recorded: if "
        "either fails, nothing is recorded and --out is left as it was. --out is never the "
        "campaign database, and an existing file is replaced only with --force. When there is "
        "nothing to propose (the goal is met, or the budget or the pool is spent) no file is "
        "written and the exit code is 3.",
        "bayeseval campaign propose --db camp.db --batch-size 50 --out batch.csv",
    )
    p.add_argument(
        "--batch-size",
        type=_positive_int,
        default=None,
        help="rows to propose (default: the campaign's batch size, set at create); a campaign created with "
        "--cluster proposes this many whole units, every row of each",
    )
    _add_batch_output(p)

    p = add_command(
        sub,
        "ingest",
        "read labelled rows back",
        "Record labels for proposed rows; all or nothing (any bad row rejects the file), except "
        "that rows whose label is blank (empty, spaces only, null; an unlabelled task of a Label "
        "Studio export) are left pending and counted, unless --strict. Rows sent again with the "
        "label they already have are skipped; a different label for a labelled row is an error "
        "unless --relabel. A Label Studio import file (tasks without annotations) is refused.",
        "bayeseval campaign ingest --db camp.db --labels batch.csv --y-true label",
    )
    p.add_argument("--labels", required=True, help="labelled file (.csv, .csv.gz or .parquet)")
    p.add_argument("--id-column", default=None, help="row id column (default: the pool's id column name)")
    p.add_argument("--y-true", dest="y_true", default=None, help="column with the true labels (default: label)")
    p.add_argument("--relabel", action="store_true", help="replace the stored label of rows labelled differently")
    p.add_argument(
        "--strict",
        action="store_true",
        help="refuse the whole file when a row's label is blank (default: leave those rows pending)",
    )
    p.add_argument(
        "--annotator-column",
        default=None,
        help="column naming who gave each label (one row per annotation; Label Studio exports need none)",
    )
    p.add_argument(
        "--from-name",
        default=None,
        help="Label Studio choice control holding the label (default: the only one, or 'label')",
    )

    p = add_command(
        sub,
        "status",
        "show per-stratum progress",
        "Everything Campaign.status() shows per stratum (pool rows, labels, pending, trials, "
        "successes, posterior mean and credible interval, half-width, done, exhausted, outlier, "
        "cost), plus the forecast labels and their cost; with --json also the annotators' "
        "agreement per stratum.",
        "bayeseval campaign status --db camp.db --json",
    )

    p = add_command(
        sub,
        "pending",
        "list the proposals waiting for labels",
        "Number of pending proposals per round (and their ids with --json).",
        "bayeseval campaign pending --db camp.db",
    )

    p = add_command(
        sub,
        "release",
        "withdraw pending proposals",
        "Withdraw pending proposals so their rows can be proposed again.",
        "bayeseval campaign release --db camp.db --round 3",
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every pending proposal")
    which.add_argument("--round", type=_positive_int, default=None, help="the pending proposals of one round")
    which.add_argument("--ids", type=_columns, default=None, help="comma-separated row ids")
    which.add_argument("--file", default=None, help="a batch file whose id column lists the rows")
    p.add_argument("--id-column", default=None, help="row id column of --file (default: the pool's id column name)")

    p = add_command(
        sub,
        "export",
        "write the pending rows to a file again",
        "Re-write the pending proposals (all, or one --round) as a batch file with an empty label column.",
        "bayeseval campaign export --db camp.db --out batch.csv",
    )
    _add_batch_output(p)
    p.add_argument("--round", type=_positive_int, default=None, help="only this round's pending rows")

    p = add_command(
        sub,
        "forecast",
        "labels (and cost) still needed",
        "Labels still needed per stratum to meet the target, from the current posterior, and their cost.",
        "bayeseval campaign forecast --db camp.db",
    )
    p = add_command(
        sub,
        "history",
        "the proposal rounds",
        "One line per proposal round: time, rule and labels requested per stratum.",
        "bayeseval campaign history --db camp.db --json",
    )
    p = add_command(
        sub,
        "report",
        "write an HTML campaign report",
        "An HTML report: per-stratum progress over the rounds, the current intervals, the "
        "forecast and the labels still needed, with plots inline.",
        "bayeseval campaign report --db camp.db --out report.html",
    )
    p.add_argument("--out", required=True, help="the .html file to write")
    _add_force(p)

    p = add_command(
        sub,
        "labelstudio-config",
        "write a Label Studio labelling configuration",
        "The labelling configuration (XML) for the campaign's tasks: each content column (create "
        "--content) as Text, or Image for columns of image URLs, and a Choices control named 'label' "
        "with the campaign's known labels.",
        "bayeseval campaign labelstudio-config --db camp.db --out config.xml",
    )
    p.add_argument("--out", default=None, help="the .xml file to write (default: print it)")
    p.add_argument(
        "--content-type",
        type=_content_type,
        action="append",
        default=None,
        help="COLUMN=text or COLUMN=image: how to show a content column (repeatable; "
        "default: Image for columns of image URLs)",
    )
    p.add_argument(
        "--show-prediction",
        action="store_true",
        help="also show the model's prediction (write the tasks with --show-prediction too)",
    )
    _add_force(p)


def _add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true", help="replace --out if it exists (never the campaign database)")


def _add_batch_output(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="output file (.csv, .csv.gz, .parquet, .json or .jsonl)")
    _add_force(p)
    p.add_argument(
        "--format",
        choices=list(FORMATS),
        default=None,
        help="batch format (default: from the --out name; labelstudio writes Label Studio tasks, .json)",
    )
    p.add_argument(
        "--show-prediction",
        action="store_true",
        help="include the model's prediction (and score); left out by default so labels are not biased",
    )
