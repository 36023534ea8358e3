"""``bayeseval plan``: trials needed for a target interval width, and its sub-commands
``allocate`` (a labelling budget across strata) and ``split`` (how to draw a test set).
"""

from __future__ import annotations

import argparse
import math
from statistics import NormalDist
from typing import Any

from bayeseval.cli.io import HelpFormatter
from bayeseval.cli.shared import (
    EXIT_OK,
    LEVEL,
    MAX_COUNT,
    emit,
    float_between,
    int_at_least,
    json_object,
    rate_value,
    weights_json,
)

__all__: list[str] = []


# -- plan ----------------------------------------------------------------------------------
def _count_or_error(value: float, what: str, option: str, given: Any) -> int:
    """``ceil(value)`` as an int, refusing counts that are not exactly representable."""
    if not math.isfinite(value) or value > MAX_COUNT:
        raise ValueError(f"{option} {given!r} needs {value:.3g} {what}, more than 2**53: no count that large is exact")
    return int(-(-value // 1))


def _check_plan_target(args: argparse.Namespace, option: str) -> None:
    """Refuse a target so small that no method's count can be exact (before computing it).

    Every interval at level ``L`` needs at least ``z**2 / (2 e) - z**2`` trials for a
    half-width ``e`` (the Wilson bound at rate 0; other rates and methods need more).
    """
    z = NormalDist().inv_cdf((1 + args.level) / 2)
    e = args.halfwidth if args.se is None else z * args.se
    target = args.se if args.se is not None else args.halfwidth
    if e <= 0 or z * z / (2 * e) - z * z > MAX_COUNT:
        raise ValueError(
            f"{option} {target!r} is too small: it needs more than 2**53 trials per stratum, "
            "more than any count can hold exactly; choose a larger target"
        )


def _cmd_plan(args: argparse.Namespace) -> int:
    if args.halfwidth is None and args.se is None:
        raise ValueError(
            "plan needs --halfwidth or --se (or a sub-command: allocate, split; see 'bayeseval plan --help')"
        )
    option = "--se" if args.se is not None else "--halfwidth"
    _check_plan_target(args, option)
    from bayeseval.plan.sizes import sample_size  # deferred: fast start-up

    n = sample_size(se=args.se, halfwidth=args.halfwidth, rate=args.rate, level=args.level, method=args.method)
    target = args.halfwidth if args.se is None else args.se
    n = _count_or_error(float(n), "trials per stratum", option, target)
    rate = 0.5 if args.rate is None else args.rate
    payload: dict[str, Any] = {
        "n_per_stratum": n,
        "halfwidth": args.halfwidth,
        "se": args.se,
        "rate": args.rate,
        "assumed_rate": rate,
        "level": args.level,
        "method": args.method,
    }
    lines = [f"trials needed per stratum: {n}", _assumed_rate_line(args.rate)]
    edge = _edge_warning(args, n, rate)
    if edge is not None:
        payload["wilson_n_per_stratum"], payload["warning"] = edge
        lines.append(f"warning: {edge[1]}")
    groups = args.groups or 1
    if groups > 1:
        payload["n_groups"] = groups
        payload["minority_rows"] = _count_or_error(float(n) * groups, "minority rows", "--groups", groups)
        lines.append(f"across {groups} groups: {payload['minority_rows']} minority rows")
    if args.share is not None:
        payload["total_rows"] = _count_or_error(n * groups / args.share, "rows", "--share", args.share)
        lines.append(f"at a minority share of {args.share:g}: about {payload['total_rows']:,} rows in all")
    emit(payload, args.json, "\n".join(lines))
    return EXIT_OK


def _assumed_rate_line(rate: float | None) -> str:
    if rate is None:
        return "planning rate: 0.5 (assumed: no --rate given; 0.5 needs the most trials, so the plan holds at any rate)"
    return f"planning rate: {rate:g} (from --rate)"


def _edge_warning(args: argparse.Namespace, n: int, rate: float) -> tuple[int, str] | None:
    """With --method normal and --halfwidth: the Wilson-search size when the normal one falls short.

    The normal formula assumes a symmetric interval; near a rate of 0 or 1 the Wilson interval
    on that many trials is wider than the target, and a search over n finds the size it needs.
    """
    if args.method != "normal" or args.halfwidth is None:
        return None
    from bayeseval.plan.sizes import sample_size  # deferred: fast start-up

    wilson = int(sample_size(halfwidth=args.halfwidth, rate=rate, level=args.level, method="wilson"))
    if wilson <= n:
        return None
    return wilson, (
        f"at a rate of {rate:g} the normal approximation's {n} trials give a Wilson interval "
        f"wider than +/-{args.halfwidth:g}; the Wilson search needs {wilson} "
        "(use --method wilson)"
    )


def _cmd_allocate(args: argparse.Namespace) -> int:
    from bayeseval._api.validation import MAX_EXACT_COUNT  # deferred: fast start-up
    from bayeseval._kernels import allocation  # deferred: fast start-up
    from bayeseval.plan.allocation import allocate  # deferred: fast start-up

    weights, rates = args.weights, args.rates
    if rates is not None and isinstance(weights, dict) != isinstance(rates, dict):
        raise ValueError(
            "--rates must be a JSON object when --weights is one, and a list when "
            f"--weights is a list; got --weights {weights!r} and --rates {rates!r}"
        )
    if isinstance(weights, dict) and isinstance(rates, dict) and set(rates) != set(weights):
        raise ValueError(f"--rates keys {sorted(rates)} must be the --weights keys {sorted(weights)}")
    plain = allocation.plain_inputs(weights, rates, args.minimum, None)
    if plain is None or args.budget > MAX_EXACT_COUNT:
        # not plain numbers, or invalid: allocate reads them with pandas (and raises)
        alloc = allocate(args.budget, weights, rates, method=args.method, minimum=args.minimum)
        keys, counts = list(alloc.index), alloc.to_numpy()
    else:  # JSON numbers: allocated on plain arrays, without importing pandas
        keys, shares, variances, lo, hi = plain
        counts = allocation.allocation_counts(
            args.budget, shares, variances, lo, hi, keys, args.method, has_minimum=args.minimum is not None
        )
    labels = [str(k) for k in keys]
    payload = {
        "budget": args.budget,
        "method": args.method,
        "minimum": args.minimum,
        "allocation": dict(zip(labels, (int(v) for v in counts), strict=True)),
    }
    width = max(len(x) for x in labels + ["stratum"])
    lines = [f"allocating {args.budget} labels ({args.method}):", f"  {'stratum':<{width}}  labels"]
    lines += [f"  {k:<{width}}  {int(v)}" for k, v in zip(labels, counts, strict=True)]
    emit(payload, args.json, "\n".join(lines))
    return EXIT_OK


def _cmd_split(args: argparse.Namespace) -> int:
    import numpy as np  # deferred: fast start-up

    from bayeseval.plan.decision import split_decision  # deferred: fast start-up

    res = split_decision(
        n_total=args.n_total,
        n_test=args.n_test,
        share=args.share,
        n_min=args.n_min,
        n_groups=args.groups,
        max_test_share=args.max_test_share,
        max_inflate=args.max_inflate,
    )
    # the fields of ``res.table``'s one row, as Python numbers (the table would import pandas)
    payload = {k: v.item() if isinstance(v, np.generic) else v for k, v in res.to_dict().items()}
    lines = [
        f"decision: {res.branch}",
        f"test set: {res.n_test:,} rows ({res.n_minority_test:,} minority rows)",
        f"why: {res.reason}",
    ]
    if res.warning:
        lines.append(f"warning: {res.warning}")
    emit(payload, args.json, "\n".join(lines))
    return EXIT_OK


def add_plan(sub: Any) -> None:
    plan = sub.add_parser(
        "plan",
        help="trials needed for a target interval width; label allocation; test-split decision",
        formatter_class=HelpFormatter,
        description="Sample size for one rate from a target half-width or standard error. The "
        "output states the planning rate it assumed and, near a rate of 0 or 1, the larger size "
        "a Wilson interval needs. Sub-commands: 'allocate' shares a labelling budget across "
        "strata, 'split' decides how to draw a test set that holds enough minority rows.",
        epilog="examples:\n  bayeseval plan --halfwidth 0.05 --rate 0.7\n"
        "  bayeseval plan --halfwidth 0.05 --rate 0.7 --groups 8 --share 0.004 --json\n"
        '  bayeseval plan allocate --budget 400 --weights \'{"a": 0.7, "b": 0.3}\' '
        '--rates \'{"a": 0.1, "b": 0.4}\'\n'
        "  bayeseval plan split --n-total 300000 --n-test 60000 --share 0.0042 --n-min 323",
    )
    target = plan.add_mutually_exclusive_group()
    target.add_argument(
        "--halfwidth", type=float_between(0.0, 1.0), help="target half-width of the interval (this or --se)"
    )
    target.add_argument(
        "--se", type=float_between(0.0, 0.5, closed_high=True), help="target standard error (this or --halfwidth)"
    )
    plan.add_argument(
        "--rate", type=rate_value, default=None, help="planning rate; without it 0.5, which needs the most trials"
    )
    plan.add_argument("--level", type=LEVEL, default=0.95, help="interval level")
    plan.add_argument(
        "--method", default="normal", choices=("normal", "wilson", "clopper_pearson"), help="interval the plan is for"
    )
    plan.add_argument("--groups", type=int_at_least(1), default=None, help="number of subgroups needing this n")
    plan.add_argument(
        "--share", type=float_between(0.0, 1.0, closed_high=True), default=None, help="minority share in the population"
    )
    plan.add_argument("--json", action="store_true", help="machine-readable output")
    plan.set_defaults(func=_cmd_plan)
    subs = plan.add_subparsers(dest="plan_command", metavar="SUBCOMMAND")
    _add_plan_allocate(subs)
    _add_plan_split(subs)


def _add_plan_allocate(subs: Any) -> None:
    alloc = subs.add_parser(
        "allocate",
        help="share a labelling budget across strata",
        formatter_class=HelpFormatter,
        description="Split a budget of labels across strata (bayeseval.plan.allocation.allocate): "
        "'optimal' is Neyman allocation (Cochran 1977, section 5.5), 'proportional' follows the "
        "population shares, 'equal' gives each stratum the same, 'equal_precision' the same "
        "half-width, 'compromise' a minimum first and the rest optimally.",
        epilog='example:\n  bayeseval plan allocate --budget 400 --weights \'{"a": 0.7, "b": 0.3}\' '
        '--rates \'{"a": 0.1, "b": 0.4}\' --minimum 60',
    )
    alloc.add_argument("--budget", type=int_at_least(1), required=True, help="labels to allocate")
    alloc.add_argument(
        "--weights",
        type=weights_json,
        required=True,
        help='population shares as JSON, e.g. \'{"a": 0.7, "b": 0.3}\', or a list',
    )
    alloc.add_argument(
        "--rates",
        type=json_object("planning rate"),
        default=None,
        help="planning rates as JSON, keyed like --weights; without them 0.5 everywhere",
    )
    alloc.add_argument(
        "--method",
        default="optimal",
        choices=("optimal", "proportional", "equal", "equal_precision", "compromise"),
        help="allocation rule",
    )
    alloc.add_argument("--minimum", type=int_at_least(0), default=None, help="labels every stratum gets at least")
    alloc.add_argument("--json", action="store_true", help="machine-readable output")
    alloc.set_defaults(func=_cmd_allocate)


def _add_plan_split(subs: Any) -> None:
    split = subs.add_parser(
        "split",
        aliases=["split-decision", "split_decision"],
        help="keep the class proportion in the test set, or grow it / oversample the minority",
        formatter_class=HelpFormatter,
        description="Decide how to draw a test set (bayeseval.plan.decision.split_decision): keep the "
        "minority share if a proportional test set holds --n-min minority rows per group, else "
        "grow the test set (up to --max-test-share of the data), else oversample the minority "
        "and reweight.",
        epilog="example:\n  bayeseval plan split --n-total 300000 --n-test 60000 --share 0.0042 --n-min 323 --groups 8",
    )
    split.add_argument("--n-total", type=int_at_least(1), required=True, help="rows in the data")
    split.add_argument("--n-test", type=int_at_least(1), required=True, help="planned test rows")
    split.add_argument("--share", type=float_between(0.0, 1.0), required=True, help="minority share of the rows")
    split.add_argument("--n-min", type=int_at_least(1), required=True, help="minority test rows needed per group")
    split.add_argument("--groups", type=int_at_least(1), default=1, help="groups needing --n-min each")
    split.add_argument(
        "--max-test-share",
        type=float_between(0.0, 1.0, closed_high=True),
        default=0.3,
        help="largest share of the data the test set may take",
    )
    split.add_argument(
        "--max-inflate",
        type=float_between(1.0, math.inf),
        default=5.0,
        help="largest factor by which the minority may be oversampled",
    )
    split.add_argument("--json", action="store_true", help="machine-readable output")
    split.set_defaults(func=_cmd_split)
