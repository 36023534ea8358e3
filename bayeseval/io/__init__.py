"""Readers of evaluation harnesses' files: Inspect logs, lm-eval samples, promptfoo results; human labels joined by id.

Each reader returns :class:`EvalRecords`: one tidy frame (``model``, ``task``, ``item``,
``epoch``, ``outcome`` in [0, 1], one column per scorer, ``metadata.*``) and the design the file
implies (a :class:`~bayeseval.Design`). Each public name is imported from its module on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bayeseval._api.lazy import lazy_exports

__all__ = ["EvalRecords", "read_inspect", "read_lm_eval", "read_promptfoo", "join_labels"]

if TYPE_CHECKING:  # pragma: no cover
    from bayeseval.io.inspect_logs import read_inspect
    from bayeseval.io.labels import join_labels
    from bayeseval.io.lm_eval import read_lm_eval
    from bayeseval.io.promptfoo import read_promptfoo
    from bayeseval.io.records import EvalRecords

__getattr__, __dir__ = lazy_exports(__name__)
