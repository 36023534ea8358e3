"""The pooled model of an evaluation or a campaign as one setting: its name, prior and engine.

:class:`PooledModel` is what ``model=`` of :func:`~bayeseval.evaluate`, :func:`~bayeseval.audit`,
:meth:`Campaign.create <bayeseval.campaign.Campaign.create>` and :func:`~bayeseval.simulate` take
besides a model's name: the model with its hyperprior and the engine that fits it, so that the
entry points carry one argument instead of three.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from bayeseval._api.validation import short_repr
from bayeseval.models.priors import resolve_prior

__all__ = ["PooledModel", "MODEL_NAMES", "ENGINES", "model_parts"]

#: every pooled model's name some entry point takes (each entry point checks its own)
MODEL_NAMES = ("beta_binomial", "robust", "logit_normal", "auto", "crossed")
#: the engines that fit a pooled model
ENGINES = ("exact", "pymc")


@dataclass(frozen=True, repr=False)
class PooledModel:
    """A pooled (hierarchical) model: its name, its hyperprior and the engine that fits it.

    Parameters
    ----------
    name : {"beta_binomial", "robust", "logit_normal", "auto", "crossed"}
        The model, as ``model=`` names it: :func:`~bayeseval.evaluate` takes
        ``"beta_binomial"``, ``"robust"`` and ``"logit_normal"`` (with ``engine="pymc"``);
        campaigns and simulations ``"robust"``, ``"auto"`` and ``"beta_binomial"``;
        :func:`~bayeseval.audit` ``"robust"``, ``"beta_binomial"`` and ``"crossed"``.
    prior : {"default", "bda"}, dict or Prior, default "default"
        Hyperprior of the model (see :func:`bayeseval.models.priors.resolve_prior`); campaigns
        take a name.
    engine : {"exact", "pymc"}, default "exact"
        ``"exact"``: the grid engine (no PyMC); ``"pymc"``: PyMC's sampler (evaluations only;
        campaigns and audits fit the exact engine).

    Raises
    ------
    TypeError
        ``name`` or ``engine`` is not a string (the message names ``model`` and the field).
    ValueError
        An unknown name, prior or engine (the message names the field).

    Examples
    --------
    >>> PooledModel("robust", prior="bda")
    PooledModel('robust', prior='bda')
    >>> PooledModel("logit_normal", engine="pymc").engine
    'pymc'
    >>> PooledModel("beta_binomial", engine="stan")
    Traceback (most recent call last):
    ...
    ValueError: model.engine must be one of 'exact', 'pymc', got 'stan'
    """

    name: str
    prior: Any = field(default="default", kw_only=True)
    engine: str = field(default="exact", kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"model.name must be a model name (str), got {short_repr(self.name)}")
        if self.name not in MODEL_NAMES:
            raise ValueError(f"model.name must be one of {', '.join(map(repr, MODEL_NAMES))}, got {self.name!r}")
        try:
            resolve_prior(self.prior)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"model.prior: {exc}") from exc
        if not isinstance(self.engine, str):
            raise TypeError(f"model.engine must be 'exact' or 'pymc', got {short_repr(self.engine)}")
        if self.engine not in ENGINES:
            raise ValueError(f"model.engine must be one of {', '.join(map(repr, ENGINES))}, got {self.engine!r}")

    def __repr__(self) -> str:
        # the name, then only the fields that differ from the default, as they would be typed
        parts = [repr(self.name)]
        parts += [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if f.name != "name" and not _same(getattr(self, f.name), f.default)
        ]
        return f"PooledModel({', '.join(parts)})"


def _same(value: Any, default: Any) -> bool:
    return isinstance(value, str) and value == default


def model_parts(model: Any) -> tuple[Any, Any, Any]:
    """``(name, prior, engine)`` of a ``model=`` argument: a :class:`PooledModel` or a name.

    A name (or anything else, which the entry point's own check refuses) comes with the default
    prior and engine.

    Parameters
    ----------
    model : PooledModel or str
        The argument.

    Returns
    -------
    tuple
        The model's name, prior and engine.

    Examples
    --------
    >>> model_parts("robust")
    ('robust', 'default', 'exact')
    >>> model_parts(PooledModel("beta_binomial", prior="bda"))
    ('beta_binomial', 'bda', 'exact')
    """
    if isinstance(model, PooledModel):
        return model.name, model.prior, model.engine
    return model, "default", "exact"
