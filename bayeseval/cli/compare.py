"""``bayeseval compare``: paired differences between models on the same items, per stratum.

Declaring the command needs only argparse, so ``bayeseval --help`` starts without pandas or
SciPy; :func:`run_compare` imports the estimator when the command runs.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bayeseval.cli.harness import add_harness_args, check_one_input
from bayeseval.cli.shared import EXIT_OK, LEVEL, json_default

COMPARE_HELP = "paired differences between models on the same items, per stratum, with tie groups"
COMPARE_DESCRIPTION = (
    "For every pair of models (or every model against --reference), per stratum and overall: the "
    "difference in mean score paired by item (epochs averaged per item), an interval valid at every "
    "sample size, p-values adjusted across all pairs and strata (Holm by default), and a leaderboard "
    "whose tie groups hold the models not separable from their group's best. Exits 2 on bad input."
)
COMPARE_EPILOG = (
    "examples:\n  bayeseval compare answers.csv --strata task\n"
    "  bayeseval compare answers.parquet --outcome match --strata metadata.category --reference gpt-a --json\n"
    "  bayeseval compare --inspect logs/ --strata metadata.category\n"
    "  bayeseval compare --inspect logs/ --epoch 1 --labels human.csv --strata metadata.category\n"
    "  bayeseval compare answers.csv --human human --selected-by gpt-a --strata category"
)


SELECTED_BY_HELP = (
    "with --human or --labels (also with a data file): the human-labelled items were chosen by this model's "
    "judge verdict (the outcome), e.g. 50 it passed and 50 it failed; each item gets its stratum and verdict "
    "cell's share of labelled items as its inclusion probability (as join_labels' selected_by does for one "
    "model), instead of a column given with --inclusion"
)


def add_compare_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Declare the ``compare`` command's arguments on ``p`` and return it.

    Examples
    --------
    >>> p = add_compare_arguments(argparse.ArgumentParser())
    >>> args = p.parse_args(["answers.csv", "--strata", "task"])
    >>> args.model, args.item, args.adjust, args.level
    ('model', 'item', 'holm', 0.95)
    """
    p.add_argument("data", nargs="?", default=None, help="answers file (.csv, .csv.gz or .parquet), one row per answer")
    p.add_argument("--model", default="model", help="column naming the model of each answer")
    p.add_argument("--item", default="item", help="column(s) identifying an item, comma separated")
    p.add_argument(
        "--outcome",
        default=None,
        help="column of scores in [0, 1] (default: 'outcome', unless --y-true and --y-pred are given)",
    )
    p.add_argument("--y-true", default=None, help="with --y-pred: the score is 1 where the two columns agree")
    p.add_argument("--y-pred", default=None, help="with --y-true")
    p.add_argument("--strata", default=None, help="stratum column(s), comma separated")
    p.add_argument(
        "--cluster",
        default=None,
        help="column whose rows (within a stratum) are one sampling unit, e.g. a shared passage "
        "(default: the item is the unit)",
    )
    p.add_argument(
        "--inclusion",
        default=None,
        help="with --human: column of each labelled item's probability of having been chosen for labelling "
        "(a calibration set drawn by the judge's verdict), one per item",
    )
    p.add_argument("--reference", default=None, help="compare each model with this one instead of every pair")
    p.add_argument("--level", type=LEVEL, default=0.95, help="family level of the separable claims")
    p.add_argument(
        "--adjust",
        default="holm",
        choices=("holm", "bonferroni", "none"),
        help="multiplicity adjustment across pairs and strata",
    )
    p.add_argument(
        "--human",
        default=None,
        help="column of human labels of the answers (1 right, 0 wrong; empty where unlabelled): the outcome is "
        "then the judge's 0/1 verdict on every answer and the difference is in human-judged accuracy",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_harness_args(p, labels=True, selected_by=("MODEL", SELECTED_BY_HELP))
    p.set_defaults(labels_on="model,item")
    return p


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    cols = [c.strip() for c in value.split(",") if c.strip()]
    return cols or None


def run_compare(args: Any) -> int:
    """Run ``bayeseval compare`` from parsed arguments; print the comparison, return 0.

    The text is :meth:`ModelComparison.to_text`; ``--json`` prints
    :meth:`ModelComparison.to_dict`. Model, item and cluster columns of a CSV file are read as
    text, so ``--reference`` names a model as the file writes it.
    """
    from bayeseval.cli.io import read_table  # deferred: pandas
    from bayeseval.estimate.paired import compare_models  # deferred: SciPy, pandas

    selected_by = getattr(args, "selected_by", None)
    args = argparse.Namespace(**{**vars(args), "selected_by": None})  # a model here, not the reader's columns
    check_one_input(args)
    human = _human_option(args)
    items = _split(args.item) or ["item"]
    strata = _split(args.strata)
    ids = [args.model, *items, *([args.cluster] if args.cluster else [])]
    if args.data is None:
        data, items, source = _harness_answers(args, items)
    else:
        data, source = read_table(args.data, name="data", text_columns=ids, require_rows=True), repr(args.data)
    for option, names in (
        ("--model", [args.model]),
        ("--item", items),
        ("--strata", strata or []),
        ("--cluster", [args.cluster] if args.cluster else []),
        ("--inclusion", [args.inclusion] if args.inclusion else []),
        ("--outcome", [args.outcome] if args.outcome else []),
        ("--human", [args.human] if args.human else []),
        ("--y-true", [args.y_true] if args.y_true else []),
        ("--y-pred", [args.y_pred] if args.y_pred else []),
    ):
        for col in names:
            if col not in data.columns:
                raise ValueError(f"{option} column {col!r} is not in {source}; columns are {list(data.columns)}")
    by_text = {str(m): m for m in data[args.model].dropna().unique()}
    reference = args.reference
    if reference is not None:
        if reference not in by_text:
            raise ValueError(f"--reference {reference!r} is not a model of {source}; models are {list(by_text)}")
        reference = by_text[reference]
    inclusion = args.inclusion
    if selected_by is not None:
        if selected_by not in by_text:
            raise ValueError(
                f"--selected-by {selected_by!r} is not a model of {source}: name the model whose judge verdicts "
                f"chose the labelled items; models are {list(by_text)}"
            )
        data, inclusion = _selected_by(data, args, by_text[selected_by], human, items, strata or []), SELECTION
    result = compare_models(
        data,
        model=args.model,
        item=items if len(items) > 1 else items[0],
        outcome=args.outcome,
        y_true=args.y_true,
        y_pred=args.y_pred,
        strata=strata,
        design={k: v for k, v in (("cluster", args.cluster), ("inclusion", inclusion)) if v} or None,
        reference=reference,
        level=args.level,
        adjust=args.adjust,
        human=human,
    )
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=json_default))
    else:
        print(result.to_text())
    return EXIT_OK


def _human_option(args: Any) -> str | None:
    """The human label column: ``--human``, or ``human`` when ``--labels`` joins labels onto harness files."""
    if getattr(args, "labels", None) is None:
        return args.human
    if args.human is not None:
        raise ValueError("give --human (a column of the data) or --labels (a labels file), not both")
    if args.model not in (_split(args.labels_on) or []):
        raise ValueError(
            f"--labels-on {args.labels_on!r} must name the model column {args.model!r}: a human label "
            "judges one model's answer (default --labels-on model,item)"
        )
    return "human"


def _harness_answers(args: Any, items: list[str]) -> tuple[Any, list[str], str]:
    """The answers of ``--inspect``/``--lm-eval``/``--promptfoo``, the item columns and how to name them.

    The outcome is the scorer (``--outcome`` may name another score column); with the default
    ``--item`` the items of several tasks are told apart by ``task`` and ``item``.
    """
    from bayeseval.cli.harness import harness_source, read_harness

    if args.y_true is not None or args.y_pred is not None:
        raise ValueError("--y-true and --y-pred do not apply to harness files: the score is the scorer (--scorer)")
    frame = read_harness(args).frame
    if items == ["item"] and frame["task"].nunique() > 1 and "task" not in (_split(args.strata) or []):
        items = ["task", "item"]
    return frame, items, harness_source(args)


#: the column ``--selected-by`` writes each item's inclusion probability in (as ``join_labels`` names it)
SELECTION = "inclusion"


def _selected_by(data: Any, args: Any, model: Any, human: str | None, items: list[str], strata: list[str]) -> Any:
    """``data`` with the column :data:`SELECTION`: each item's inclusion probability when the labelled items
    were drawn at random within the cells of ``model``'s judge verdict (and the stratum).

    The probabilities are :func:`bayeseval.io.join_labels`'s ``selected_by`` shares, computed on
    ``model``'s answers (labelled where their human label is given) and copied to every model's
    answer to the same item. With several answers per item (epochs) the cell is the item's
    majority verdict (a tie a pass), the item verdict of the paired proxy path. Within a stratum and a verdict the labelled items are a random
    sample whether the draw was made per stratum or over all items, so the stratum's cells are
    always used.
    """
    from bayeseval.io import join_labels  # deferred: pandas

    option = f"--selected-by {str(model)!r}"
    if human is None:
        raise ValueError(f"{option} says how the human-labelled items were chosen: give --human or --labels too")
    if args.inclusion is not None:
        raise ValueError("give --selected-by or --inclusion, not both: each says how the labelled items were chosen")
    if SELECTION in data.columns:
        raise ValueError(
            f"{option} writes the column {SELECTION!r}, which the data already has: give that column with "
            "--inclusion, or rename it"
        )
    keys = list(dict.fromkeys([*strata, *items]))
    if args.y_true is not None and args.y_pred is not None:
        verdict_name = "verdict"
        verdicts = (data[args.y_true] == data[args.y_pred]).astype(float).where(data[args.y_pred].notna())
    else:
        verdict_name = args.outcome or "outcome"
        if verdict_name not in data.columns:
            raise ValueError(f"{option}: the judge's verdict column {verdict_name!r} is not in the data")
        verdicts = data[verdict_name]
    rows = data[data[args.model] == model]
    answers = rows[keys].assign(**{verdict_name: verdicts[rows.index]})
    labelled = rows[human].notna()
    labels = rows.loc[labelled, keys].assign(label=rows.loc[labelled, human])
    if answers.duplicated(
        keys
    ).any():  # epochs: an item's verdict is its answers' majority, as the paired path reads it
        mean = answers.groupby(keys, sort=False, as_index=False)[verdict_name].mean()
        answers = mean.assign(
            **{verdict_name: (mean[verdict_name] >= 0.5).astype(float).where(mean[verdict_name].notna())}
        )
        labels = labels.drop_duplicates(keys)
    try:
        shares = join_labels(answers, labels, on=keys, name="_labelled", selected_by=[*strata, verdict_name])
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{option}: {exc}") from exc
    shares = shares.drop_duplicates(keys)[[*keys, SELECTION]]
    out = data.merge(shares, on=keys, how="left", validate="many_to_one")
    out.index = data.index
    orphans = out[human].notna() & out[SELECTION].isna()
    if orphans.any():
        raise ValueError(
            f"{option}: {int(orphans.sum())} labelled answer(s) are on items in a stratum and verdict of "
            f"{str(model)!r} where none of its answers is labelled, so the labels were not chosen by its verdict"
        )
    return out
