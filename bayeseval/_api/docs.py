"""Docstring text that several public docstrings share, written once and filled in at import.

A docstring names a shared block on a line of its own, ``{ax}``, indented like the text
around it; the decorator :func:`fill_doc` replaces each such line by the block, indented the
same, when the module is imported. ``help()``, ``__doc__``, the doctests, numpydoc and the
documentation site (which takes a docstring with such a line from the imported object) all
see the whole text. Only a line holding nothing but ``{name}`` is a placeholder: braces
elsewhere (``{"exact", "midp"}``, an f-string in an example) are left alone, and a
placeholder naming no block fails at import, so a typo cannot reach the documentation.

The blocks here are the ones used across packages; a module passes its own (the blocks of
two functions of one module) to :func:`fill_doc` as keywords.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["BLOCKS", "fill_doc", "filled"]

T = TypeVar("T")

#: a line holding only ``{name}``: the name of a block, with the line's indentation
PLACEHOLDER = re.compile(r"^(?P<indent>[ \t]*)\{(?P<name>[A-Za-z_]\w*)\}[ \t]*$", flags=re.MULTILINE)

#: shared blocks by name; each is written without indentation (its continuation lines
#: indented by four spaces, as in a numpydoc section) and takes the placeholder's indentation
BLOCKS: dict[str, str] = {
    "ax": """\
ax : matplotlib.axes.Axes, optional
    Axes to draw on; a new figure is made when omitted.""",
    "axes_returned": """\
Returns
-------
matplotlib.axes.Axes
    The axes drawn on.""",
    "path_returned": """\
Returns
-------
pathlib.Path
    The path written.""",
    "suffix_refused": """\
Raises
------
ValueError
    For another suffix.""",
    "error_reject_returned": """\
Returns
-------
matplotlib.axes.Axes
    The axes drawn on: estimated (and, when counted, observed) error of
    accepted rows against the reject rate.""",
    "bootstrap_policy": """\
Notes
-----
:func:`bayeseval.bootstrap_ci` and :func:`bayeseval.paired_bootstrap` share one
resampling kernel and one default policy: BCa with 9999 replicates (the
defaults of :func:`scipy.stats.bootstrap`).""",
    "records_returned": """\
Returns
-------
EvalRecords
    ``frame`` and ``design`` (unpacks as ``frame, design``), ``outcome``, ``scorers``.""",
    "random_seed": """\
random_seed : int or numpy.random.Generator, optional
    Seed for ``numpy.random.default_rng``.""",
    "campaign_level": """\
level : float
    The campaign's level.""",
    "line_returned": """\
Returns
-------
str
    One line.""",
    "counts_level": """\
successes, trials : array_like of int
    Counts per stratum.
level : float
    Confidence level.""",
    "campaign_state": """\
state : RuleState
    The campaign's state.""",
    "reach_returned": """\
Returns
-------
numpy.ndarray of object
    Per stratum ``"rows"``, ``"budget"`` or None (decided, or within reach).""",
    "target_halfwidth": """\
halfwidth : float
    Target half-width, in (0, 0.5).""",
    "phrase_returned": """\
Returns
-------
str
    One phrase.""",
    "feasibility_warn": """\
warn : bool, default False
    Emit a :class:`~bayeseval.PrecisionLimitedWarning` naming the strata that cannot
    reach the target and the half-width each can reach.""",
    "feasibility_returned": """\
Returns
-------
pandas.DataFrame
    Per stratum: ``max_trials``, ``achievable_halfwidth`` and ``feasible``.""",
    "campaign_example": """\
>>> import os, tempfile
>>> from bayeseval.campaign import Campaign
>>> pool = pd.DataFrame({"g": ["a", "b"] * 500, "pred": [0, 1] * 500})
>>> c = Campaign.create(os.path.join(tempfile.mkdtemp(), "c.db"), pool, strata="g",
...                     y_pred="pred", random_seed=0)""",
}


def filled(doc: str, blocks: Mapping[str, str]) -> str:
    """``doc`` with each placeholder line replaced by its block, indented like the line.

    Parameters
    ----------
    doc : str
        A docstring.
    blocks : mapping of str to str
        Block text by name, without indentation.

    Returns
    -------
    str
        The docstring with every placeholder filled.

    Raises
    ------
    KeyError
        A placeholder names no block.

    Examples
    --------
    >>> filled("Parameters\\n    ----------\\n    {ax}\\n", BLOCKS).splitlines()[2:]
    ['    ax : matplotlib.axes.Axes, optional', '        Axes to draw on; a new figure is made when omitted.']
    """

    def block(match: re.Match[str]) -> str:
        name, indent = match.group("name"), match.group("indent")
        if name not in blocks:
            raise KeyError(f"the docstring names the block {{{name}}}, which is not one of {sorted(blocks)}")
        return "\n".join(indent + line if line else line for line in blocks[name].splitlines())

    return PLACEHOLDER.sub(block, doc)


def fill_doc(**blocks: str) -> Callable[[T], T]:
    """Decorator: fill the placeholders of a function's or class's docstring.

    Parameters
    ----------
    **blocks : str
        Blocks of this module, by name, beside the shared :data:`BLOCKS` (a name given here
        takes precedence).

    Returns
    -------
    callable
        The decorator; it sets ``obj.__doc__`` and returns ``obj`` itself.

    Examples
    --------
    >>> @fill_doc(size="size : int\\n    How many.")
    ... def draw(size, random_seed=None):
    ...     '''Draw.
    ...
    ...     Parameters
    ...     ----------
    ...     {size}
    ...     {random_seed}
    ...     '''
    >>> print(draw.__doc__.split("----------")[1].rstrip())
    <BLANKLINE>
        size : int
            How many.
        random_seed : int or numpy.random.Generator, optional
            Seed for ``numpy.random.default_rng``.
    """
    table = {**BLOCKS, **blocks}

    def decorate(obj: Any) -> Any:
        if obj.__doc__:  # None under ``python -OO``
            obj.__doc__ = filled(obj.__doc__, table)
        return obj

    return decorate
