"""What the commands share: typed option values (each names the option through argparse) and the
printed output (text, or JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from typing import Any

from bayeseval._api import metric_names

__all__: list[str] = []

#: exit code of a command that did its work
EXIT_OK = 0

# counts and row numbers the command line prints must be exactly representable as floats
MAX_COUNT = 2**53


# -- typed converters: each names the option through argparse ("argument --x: ...") ---------
def converter(name: str, check: Callable[[str], Any]) -> Callable[[str], Any]:
    check.__name__ = name  # argparse names the type in some messages
    return check


def parse_number(text: str, kind: type) -> Any:
    try:
        value = kind(text)
    except ValueError:
        word = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"must be {word}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def int_at_least(minimum: int, maximum: int = MAX_COUNT) -> Callable[[str], int]:
    def check(text: str) -> int:
        value = parse_number(text, int)
        if not minimum <= value <= maximum:
            upper = "2**53" if maximum == MAX_COUNT else f"{maximum}"
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum} and <= {upper}, got {text!r}")
        return value

    return converter("int", check)


def float_between(low: float, high: float, *, closed_high: bool = False) -> Callable[[str], float]:
    def check(text: str) -> float:
        value = parse_number(text, float)
        if not (low < value < high or (closed_high and value == high)):
            bracket = "]" if closed_high else ")"
            raise argparse.ArgumentTypeError(f"must be in ({low:g}, {high:g}{bracket}, got {text!r}")
        return value

    return converter("float", check)


def rate_value(text: str) -> float:
    value = parse_number(text, float)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a rate in [0, 1], got {text!r}")
    return value


def metric_name(text: str) -> str:
    """A metric name or alias of one rate, returned as written (the report echoes it)."""
    key = metric_names.canonical(text)
    if key is None or key in metric_names.COMPOSITE:
        raise argparse.ArgumentTypeError(metric_names.unknown_metric(text, composite=False))
    return text.strip()


def parse_json_numbers(text: str, what: str) -> Any:
    """A JSON object label -> number, or a JSON list of numbers; else ArgumentTypeError."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(
            f'must be JSON such as \'{{"a": 0.7, "b": 0.3}}\' ({exc.msg} at character {exc.pos}), got {text!r}'
        ) from None
    values = list(value.values()) if isinstance(value, dict) else value
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    ):
        raise argparse.ArgumentTypeError(f"must be a JSON object stratum -> {what} or a list of numbers, got {text!r}")
    return value


def json_object(what: str) -> Callable[[str], Any]:
    """A JSON object label -> number or a JSON list of numbers (option values per stratum)."""
    return converter("json", lambda text: parse_json_numbers(text, what))


def weights_json(text: str) -> Any:
    """--weights: a JSON object stratum -> share, or a JSON list of shares in stratum order."""
    from bayeseval._api.validation import check_weights  # deferred: fast start-up

    value = parse_json_numbers(text, "share")
    shares = list(value.values()) if isinstance(value, dict) else value
    try:
        check_weights(shares, len(shares), name="shares")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


# -- parser ------------------------------------------------------------------------------------
LEVEL = float_between(0.0, 1.0)


SEED = int_at_least(0)


INCLUSION_HELP = (
    "with --proxy: column of each labelled row's inclusion probability, when the "
    "labels were not drawn at random within the strata"
)


def add_row_columns(p: argparse.ArgumentParser, outcome: bool = False, harness: bool = False) -> None:
    """Declare the file of rows and its two label columns (``data``, ``--y-true``, ``--y-pred``);
    with ``outcome``, ``--outcome`` (per-row outcomes) may stand in for the two; with ``harness``
    the data file is optional (harness files may stand in for it) and so are the label columns."""
    if harness:
        p.add_argument("data", nargs="?", default=None, help="predictions file (.csv, .csv.gz or .parquet)")
    else:
        p.add_argument("data", help="predictions file (.csv, .csv.gz or .parquet)")
    required = not (outcome or harness)
    p.add_argument("--y-true", required=required, help="column with the true labels")
    p.add_argument("--y-pred", required=required, help="column with the predicted labels")
    if outcome:
        p.add_argument(
            "--outcome",
            default=None,
            help="instead of --y-true and --y-pred: a column of per-row outcomes in [0, 1] "
            "(0/1 correctness or partial credit such as 0.5)",
        )


def add_design_args(p: Any, inclusion_help: str = INCLUSION_HELP, population_help: str | None = None) -> None:
    """Declare the sampling design's options (``--cluster``, ``--inclusion``, ``--population``) on a parser
    or an argument group; ``inclusion_help`` and ``population_help`` replace those options' help."""
    p.add_argument(
        "--cluster",
        default=None,
        help="column whose rows sharing a value are one sampling unit (an item answered several "
        "times, questions on one passage); intervals then treat the unit as the draw",
    )
    p.add_argument("--inclusion", default=None, help=inclusion_help)
    p.add_argument(
        "--population",
        default="process",
        choices=("process", "pool"),
        help=population_help
        or "'process' (default): the rate of the process that produced the rows; 'pool': the rate "
        "of the rows in the file themselves",
    )


def design_from_args(args: argparse.Namespace) -> Any:
    """The Design of ``--cluster``, ``--inclusion`` and ``--population``; None when none is given
    (so that rows repeating an identifier column are still noticed)."""
    from bayeseval.counts.design import Design  # deferred: fast start-up

    given = {k: getattr(args, k, None) for k in ("cluster", "inclusion")}
    population = getattr(args, "population", "process")
    if all(v is None for v in given.values()) and population == "process":
        return None
    return Design(cluster=given["cluster"], inclusion=given["inclusion"], population=population)


# -- output ------------------------------------------------------------------------------------
def emit(payload: Any, as_json: bool, text: str) -> None:
    if as_json:
        print(json.dumps(payload, indent=2, default=json_default))
    else:
        print(text)


def json_default(obj: Any) -> Any:
    import numpy as np  # deferred: fast start-up

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return None if np.isnan(obj) else float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
