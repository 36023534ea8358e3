"""Evaluation harnesses' files as the input of a command: ``--inspect``, ``--lm-eval``, ``--promptfoo``.

``report``, ``audit``, ``compare`` and ``campaign create`` read a table of rows; each also takes
the files an evaluation harness writes instead, read by :mod:`bayeseval.io`'s readers into one
frame of answers (``model``, ``task``, ``item``, ``epoch``, ``outcome``, a column per scorer,
``metadata.*``). Strata name the frame's columns (``--strata metadata.category``), and the
design the files imply (the item as the unit when there are epochs) is used unless
``--cluster``, ``--inclusion`` or ``--population`` say otherwise.

With ``--labels`` (report, audit) human labels are joined by item (:func:`bayeseval.io.join_labels`)
and the scorer becomes the proxy: the human label says whether an answer is right, the scorer
(a model-graded judge) stands in for it on the unlabelled answers. ``--selected-by`` names the
columns whose cells the labels were drawn in (``--selected-by outcome``: a calibration set chosen
by the judge's verdict), so that the estimates weight them by their inclusion probabilities.
With epochs the item was drawn, so its cell is its answers' majority verdict (:func:`bayeseval.io.join_labels`).

Declaring the options needs only argparse (``bayeseval --help`` starts without pandas); the
files are read when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_harness_args", "harness_given", "read_harness", "harness_design", "harness_source", "one_model"]

#: the column every answer's claim is put in when a human label is the truth: each answer claims
#: to be right (1), and the human label (1 right, 0 wrong) says whether it is; accuracy is then
#: the share of answers the human calls right
CLAIM = "answer_claims_right"

_INPUTS = (("inspect", "--inspect"), ("lm_eval", "--lm-eval"), ("promptfoo", "--promptfoo"))


def add_harness_args(
    p: argparse.ArgumentParser, *, labels: bool = True, selected_by: tuple[str, str] | None = None
) -> None:
    """Declare ``--inspect``/``--lm-eval``/``--promptfoo`` and the readers' options on ``p``.

    With ``labels``, also ``--labels``, ``--labels-on``, ``--label-column`` and ``--selected-by``
    (human labels joined onto the answers, the scorer as the proxy). ``selected_by``: the
    metavar and help of ``--selected-by`` when a command reads it differently (``compare``
    names a model).

    Examples
    --------
    >>> p = argparse.ArgumentParser()
    >>> add_harness_args(p)
    >>> args = p.parse_args(["--inspect", "a.eval", "b.eval", "--scorer", "match"])
    >>> args.inspect, args.scorer, harness_given(args)
    (['a.eval', 'b.eval'], 'match', True)
    """
    g = p.add_argument_group(
        "evaluation harness files (instead of a data file)",
        "read the answers from an evaluation harness's files: one row per answer with the columns model, "
        "task, item, epoch, outcome, one per scorer and metadata.* (strata such as --strata "
        "metadata.category); the item is the sampling unit when there are epochs",
    )
    which = g.add_mutually_exclusive_group()
    which.add_argument(
        "--inspect", nargs="+", metavar="LOG", default=None, help="Inspect logs (.eval or .json), or folders of them"
    )
    which.add_argument(
        "--lm-eval",
        dest="lm_eval",
        nargs="+",
        metavar="FILE",
        default=None,
        help="lm-evaluation-harness samples_<task>_*.jsonl files (--log_samples), or their output folders",
    )
    which.add_argument("--promptfoo", metavar="FILE", default=None, help="promptfoo results (-o results.json)")
    g.add_argument(
        "--scorer",
        default=None,
        help="the score read as the outcome: an Inspect scorer (when omitted, the log's first) or an lm-eval "
        "metric such as acc (when omitted, the file's only one)",
    )
    g.add_argument(
        "--filter",
        default=None,
        help="lm-eval: the filter whose rows are read, e.g. strict-match (when omitted, the file's only one)",
    )
    g.add_argument(
        "--test-id",
        dest="test_id",
        default=None,
        help="promptfoo: what identifies a test: 'description' or a test variable (when omitted, its position)",
    )
    g.add_argument("--epoch", type=_positive_int, default=None, help="keep only this epoch's answers (from 1)")
    if labels:
        g.add_argument(
            "--labels",
            default=None,
            help="human labels (.csv, .jsonl or a Label Studio export .json) joined by item: the answers they "
            "label are the labelled rows, the scorer (a judge) is the proxy on the others",
        )
        g.add_argument("--labels-on", default="item", help="the id column(s) the labels are joined on, comma separated")
        g.add_argument("--label-column", default=None, help="the labels' column (when omitted, label)")
        metavar, help_text = selected_by or (
            None,
            "column(s) of the answers within whose cells the labels were drawn at random, comma separated "
            "(e.g. outcome: a calibration set chosen 50/50 by the judge's verdict); the rows get the "
            "inclusion probabilities of that draw (with epochs, of the items by their majority verdict)",
        )
        g.add_argument("--selected-by", default=None, metavar=metavar, help=help_text)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def harness_given(args: argparse.Namespace) -> bool:
    """Whether the command reads harness files (``--inspect``, ``--lm-eval`` or ``--promptfoo``)."""
    return any(getattr(args, dest, None) is not None for dest, _ in _INPUTS)


def _option(args: argparse.Namespace) -> str:
    return next(flag for dest, flag in _INPUTS if getattr(args, dest, None) is not None)


def harness_source(args: argparse.Namespace) -> str:
    """How a report names its input: the option and its files."""
    value = getattr(args, _option(args).lstrip("-").replace("-", "_"))
    files = [value] if isinstance(value, str) else list(value)
    return f"{_option(args)} {' '.join(files)}"


def check_one_input(args: argparse.Namespace, data_option: str = "the data file", dest: str = "data") -> None:
    """Exactly one input: the data file (``args.<dest>``) or harness files; a ValueError otherwise."""
    data = getattr(args, dest, None)
    if data is not None and harness_given(args):
        raise ValueError(f"give {data_option} or {_option(args)}, not both")
    if data is None and not harness_given(args):
        raise ValueError(f"give {data_option}, or the harness's files with --inspect, --lm-eval or --promptfoo")
    if data is None:
        return
    names = ("scorer", "filter", "test_id", "epoch", *(("labels", "selected_by") if hasattr(args, "labels_on") else ()))
    used = [f"--{n.replace('_', '-')}" for n in names]
    for flag in used:
        if getattr(args, flag[2:].replace("-", "_"), None) is not None:
            raise ValueError(f"{flag} applies to harness files (--inspect, --lm-eval, --promptfoo), not to a data file")


def _split(value: str | None) -> list[str]:
    return [c.strip() for c in (value or "").split(",") if c.strip()]


def read_harness(args: argparse.Namespace) -> Any:
    """The answers of the harness files ``args`` names, as :class:`~bayeseval.io.EvalRecords`.

    The reader's options come from ``--scorer``, ``--filter`` and ``--test-id`` (each refused
    for a reader that does not take it); ``--epoch`` keeps one epoch; ``--labels`` joins
    human labels (column ``human``) and ``--selected-by`` adds their inclusion probabilities.
    Reader errors name the command's option.
    """
    from bayeseval.io import join_labels  # deferred: pandas

    option = _option(args)
    records = _read_files(args, option)
    if getattr(args, "epoch", None) is not None:
        records = _one_epoch(records, args.epoch, option)
    if len(records.frame) == 0:
        raise ValueError(f"{option}: the files hold no answers")
    if getattr(args, "labels", None) is not None:
        cells = _split(getattr(args, "selected_by", None)) or None
        if cells and "inclusion" in records.frame.columns:
            raise ValueError("selected_by writes the column 'inclusion', which the answers already have")
        try:  # with epochs join_labels reads the cells per item (its answers' majority verdict)
            records = join_labels(
                records, args.labels, on=_split(args.labels_on) or "item", column=args.label_column, selected_by=cells
            )
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"--labels {args.labels!r}: {exc}") from exc
    elif getattr(args, "selected_by", None) is not None:
        raise ValueError("--selected-by says how the --labels were chosen: give --labels too")
    return records


def _read_files(args: argparse.Namespace, option: str) -> Any:
    """The reader's records of the files; its errors name the command's options."""
    from bayeseval.io import read_inspect, read_lm_eval, read_promptfoo  # deferred: pandas

    takes = {"--inspect": ("scorer",), "--lm-eval": ("scorer", "filter"), "--promptfoo": ("test_id",)}[option]
    for name in ("scorer", "filter", "test_id"):
        if getattr(args, name, None) is not None and name not in takes:
            raise ValueError(f"--{name.replace('_', '-')} does not apply to {option}")
    try:
        if option == "--inspect":
            return read_inspect(args.inspect, scorer=args.scorer)
        if option == "--lm-eval":
            return read_lm_eval(args.lm_eval, metric=args.scorer, filter=args.filter)
        return read_promptfoo(args.promptfoo, item=args.test_id)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"{option}: {_reader_message(exc)}") from exc


def _reader_message(exc: Exception) -> str:
    """The reader's message with its argument names spelled as the command line spells them."""
    text = str(exc)
    for word, flag in (
        ("scorer=", "--scorer "),
        ("metric=", "--scorer "),
        ("filter=", "--filter "),
        ("item=", "--test-id "),
    ):
        text = text.replace(f"{word} ", flag).replace(word, flag)
    return text


def _one_epoch(records: Any, epoch: int, option: str) -> Any:
    from bayeseval.io import EvalRecords
    from bayeseval.io.records import implied_design

    frame = records.frame
    kept = frame[frame["epoch"] == epoch].reset_index(drop=True)
    if len(kept) == 0:
        raise ValueError(f"--epoch {epoch}: {option} holds epochs {sorted(frame['epoch'].unique().tolist())[:10]}")
    return EvalRecords(kept, implied_design(kept), records.outcome, records.scorers)


def harness_design(args: argparse.Namespace, records: Any) -> Any:
    """The design of the answers: the files' (``records.design``), each field overridden by its option.

    ``--cluster`` replaces the unit, ``--inclusion`` the inclusion column (``--selected-by``
    gives one), ``--population`` the population.

    Examples
    --------
    >>> from bayeseval.counts.design import Design
    >>> from types import SimpleNamespace
    >>> rec = SimpleNamespace(design=Design(cluster="item"))
    >>> harness_design(argparse.Namespace(cluster=None, inclusion=None, population="pool"), rec)
    Design(cluster='item', population='pool')
    """
    from bayeseval.counts.design import Design  # deferred: fast start-up

    implied = records.design
    return Design(
        cluster=getattr(args, "cluster", None) or implied.cluster,
        inclusion=getattr(args, "inclusion", None) or implied.inclusion,
        population=getattr(args, "population", None) or implied.population,
    )


def one_model(frame: Any, option: str, why: str) -> None:
    """Refuse answers of several models (``why`` says what to do instead)."""
    models = frame["model"].dropna().unique().tolist()
    if len(models) > 1:
        raise ValueError(f"{option}: the files hold {len(models)} models ({', '.join(map(str, models[:5]))}); {why}")


def labelled_columns(records: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The row columns of a command on harness answers: the outcome, or the human label and the proxy.

    Without labels the outcome is the scorer (``outcome``). With ``--labels`` the truth is the
    human label (``human``), every answer claims to be right (:data:`CLAIM`, so accuracy is
    the share the human calls right) and the proxy is ``--proxy`` (a scorer column) or the
    scorer read as the outcome. The frame gains the :data:`CLAIM` column.
    """
    frame = records.frame
    for flag in ("y_true", "y_pred"):
        if getattr(args, flag, None) is not None:
            raise ValueError(
                f"--{flag.replace('_', '-')} does not apply to harness files: the outcome is the scorer "
                "(--scorer), and with --labels the human label is the truth"
            )
    if "human" not in frame.columns:
        return {"frame": frame, "outcome": getattr(args, "outcome", None) or "outcome", "proxy": None}
    if getattr(args, "outcome", None) is not None:
        raise ValueError("--outcome does not apply with --labels: the human label is the truth, the scorer the proxy")
    proxy = getattr(args, "proxy", None) or "outcome"
    if proxy not in frame.columns:
        raise ValueError(f"--proxy column {proxy!r} is not a column of the answers; columns are {list(frame.columns)}")
    frame = frame.assign(**{CLAIM: 1.0})
    return {"frame": frame, "y_true": "human", "y_pred": CLAIM, "proxy": proxy, "outcome": None}


def check_columns(frame: Any, option: str, columns: dict[str, Any]) -> None:
    """Every option naming a column names a column of the answers, else a ValueError listing them."""
    for flag, names in columns.items():
        for col in [names] if isinstance(names, str) else (names or []):
            if col not in frame.columns:
                meta = [c for c in frame.columns if str(c).startswith("metadata.")]
                raise ValueError(
                    f"{flag} column {col!r} is not a column of the answers in {option}; columns are "
                    f"{list(frame.columns)[:20]} (metadata: {meta[:10]})"
                )


def report_inputs(args: argparse.Namespace) -> tuple[Any, list[str] | None, dict[str, Any]]:
    """``bayeseval report`` on harness files: the rows, the strata and the column arguments of ``evaluate``.

    Answers of several models need ``model`` among the strata (a report per model and
    category; ``bayeseval compare`` puts them side by side).
    """
    records = read_harness(args)
    option = _option(args)
    strata = _split(args.strata) or None
    cols = labelled_columns(records, args)
    frame = cols.pop("frame")
    check_columns(
        frame,
        option,
        {
            "--strata": strata,
            "--outcome": cols["outcome"],
            "--proxy": cols["proxy"],
            "--cluster": getattr(args, "cluster", None),
            "--inclusion": getattr(args, "inclusion", None),
        },
    )
    if "model" not in (strata or []):
        one_model(
            frame,
            option,
            "add model to --strata for a report per model (e.g. --strata model,metadata.category), or put them "
            "side by side with 'bayeseval compare'",
        )
    if args.pos_label is not None:
        raise ValueError("--pos-label does not apply to harness files: an answer is right (1) or not (0)")
    design = harness_design(args, records)
    if cols["proxy"] is None and design.inclusion is not None:
        raise ValueError("--inclusion weights the human labels of --labels: give --labels too")
    return frame, strata, {**cols, "pos_label": None, "design": design, "source": harness_source(args)}


#: the metrics an audit of harness answers reports: with every answer claiming to be right, the
#: class metrics (selection rate, TPR, ...) are constant
AUDIT_METRICS = ("accuracy", "error_rate")


def audit_inputs(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """``bayeseval audit`` on harness files: the rows, and the options' values the audit reads.

    The audit compares the groups' mean outcome (the scorer's value: 0/1, or partial credit
    such as 0.5), answers of one model. With several epochs of an item the item is the
    sampling unit (``--cluster`` names another): each group's interval is its units'
    interval. Its metrics are accuracy and error rate. With ``--labels`` the human label is
    the truth and the scorer the proxy (``--inclusion`` from ``--selected-by``); with epochs
    each group's interval is then the units proxy interval (the item the unit).
    """
    records = read_harness(args)
    option = _option(args)
    cols = labelled_columns(records, args)
    frame = cols.pop("frame")
    one_model(frame, option, "audit one model's files at a time (or compare the models with 'bayeseval compare')")
    cluster = getattr(args, "cluster", None) or records.design.cluster
    if getattr(args, "pos_label", None) is not None:
        raise ValueError("--pos-label does not apply to harness files: an answer is right (1) or not (0)")
    metrics = [m.strip() for m in args.metrics.split(",")] if args.metrics else ["accuracy"]
    wrong = [m for m in metrics if m not in AUDIT_METRICS]
    if wrong:
        raise ValueError(
            f"--metrics {wrong[0]!r}: an audit of harness answers reports {' and '.join(AUDIT_METRICS)} "
            "(every answer claims to be right, so the class metrics are constant)"
        )
    groups = _split(args.groups)
    check_columns(frame, option, {"--groups": groups, "--proxy": cols["proxy"]})
    labels = {"outcome": None, "y_true": cols["y_true"], "y_pred": CLAIM} if cols["proxy"] is not None else {}
    return frame, {
        "outcome": cols["outcome"],
        "y_true": None,
        "y_pred": None,
        **labels,
        "proxy": cols["proxy"],
        "inclusion": getattr(args, "inclusion", None) or records.design.inclusion,
        "cluster": cluster,
        "metrics": ",".join(metrics),
        "data": None,
    }


def campaign_pool(args: argparse.Namespace) -> Any:
    """``bayeseval campaign create`` on harness files: the pool, one row per item, indexed by its id.

    A campaign labels rows, one answer per item: answers of one model, one epoch (several
    epochs are refused for now: a campaign does not sample units; ``--epoch`` keeps one).
    The row id is the item (``task/item`` when the files hold several tasks), as text. Every
    answer claims to be right (``--y-pred`` is the :data:`CLAIM` column, so a human label of 1
    means the answer is right), and the scorer is the proxy unless ``--proxy`` names another
    score column. Sets ``args.y_pred`` and ``args.proxy``.
    """
    records = read_harness(args)
    option = _option(args)
    frame = records.frame
    for flag, name in (("--y-pred", "y_pred"), ("--id-column", "id_column")):
        if getattr(args, name, None) is not None:
            raise ValueError(f"{flag} does not apply to harness files: the row is the item, the scorer the proxy")
    one_model(frame, option, "a campaign labels one model's answers: pass that model's files")
    if records.design.cluster is not None:
        epochs = sorted(frame["epoch"].unique().tolist())
        raise ValueError(
            f"{option}: the files hold {len(epochs)} epochs of each item; a campaign labels one answer per item "
            "and does not sample items with several answers yet: pass --epoch 1 to label the first epoch's answers"
        )
    proxy = getattr(args, "proxy", None) or "outcome"
    check_columns(frame, option, {"--strata": list(args.strata or ()), "--proxy": proxy, "--score": args.score})
    ids = frame["item"].map(str)
    if frame["task"].nunique() > 1:
        ids = frame["task"].map(str) + "/" + ids
    pool = frame.assign(**{CLAIM: 1}).set_index(ids.rename("item" if frame["task"].nunique() == 1 else "answer"))
    pool = pool.drop(columns=["item"]) if pool.index.name == "item" else pool
    args.y_pred, args.proxy = CLAIM, proxy
    return pool
