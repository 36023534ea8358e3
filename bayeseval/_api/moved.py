"""Keywords an entry point no longer takes, and where they moved.

When settings that travel together become one value object (the pooled model's prior and engine in
:class:`~bayeseval.PooledModel`, a campaign's batch size and costs in
:class:`~bayeseval.campaign.Budget`, ...), a call that still passes the old keyword gets a
``TypeError`` that names the keyword and its new place instead of Python's bare "unexpected keyword
argument".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["moved_keywords"]

F = TypeVar("F", bound=Callable[..., Any])


def moved_keywords(caller: str, moves: Mapping[str, str]) -> Callable[[F], F]:
    """Refuse the keywords ``moves`` names with a ``TypeError`` saying where each one moved.

    The wrapped function keeps its name, docstring and signature (``functools.wraps``: the
    signature :func:`inspect.signature` reports is the new one, without the moved keywords).

    Parameters
    ----------
    caller : str
        How the messages name the function, e.g. ``"evaluate"`` or ``"Campaign.create"``.
    moves : mapping of str to str
        Old keyword -> what to pass instead (the end of the message).

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> @moved_keywords("f", {"prior": "pass model=PooledModel('beta_binomial', prior=...)"})
    ... def f(x, *, model="beta_binomial"):
    ...     return x
    >>> f(1)
    1
    >>> f(1, prior="bda")
    Traceback (most recent call last):
    ...
    TypeError: f() no longer takes prior=; pass model=PooledModel('beta_binomial', prior=...)
    """
    moves = dict(moves)

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for name in kwargs:
                if name in moves:
                    raise TypeError(f"{caller}() no longer takes {name}=; {moves[name]}")
            return func(*args, **kwargs)

        wrapper.moved_keywords = moves  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
