"""Arguments that became keyword-only (``random_seed``): positional calls keep working one release.

As scikit-learn's ``_deprecate_positional_args``: a call that passes a keyword-only argument
by position still works and warns with
:class:`~bayeseval._warnings.BayesevalDeprecationWarning`. The signature shows the
keyword-only form (``inspect.signature`` follows ``__wrapped__``).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from bayeseval._warnings import BayesevalDeprecationWarning

F = TypeVar("F", bound=Callable[..., Any])


def positional_deprecated(func: F) -> F:
    """Accept ``func``'s keyword-only arguments by position for one release, with a warning.

    Parameters
    ----------
    func : callable
        A function (or ``__init__``) whose keyword-only arguments used to be positional, in the
        same order.

    Returns
    -------
    callable
        ``func``, wrapped.

    Examples
    --------
    >>> import warnings
    >>> @positional_deprecated
    ... def salt(key, *, random_seed=0):
    ...     return (key, random_seed)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     salt("a", 3)
    ('a', 3)
    >>> caught[0].category.__name__
    'BayesevalDeprecationWarning'
    """
    params = inspect.signature(func).parameters.values()
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        extra = len(args) - len(positional)
        if extra <= 0:
            return func(*args, **kwargs)
        if extra > len(keyword_only):
            raise TypeError(f"{func.__qualname__}() takes {len(positional)} positional arguments, got {len(args)}")
        names = keyword_only[:extra]
        for name in names:
            if name in kwargs:
                raise TypeError(f"{func.__qualname__}() got {name!r} both by position and by keyword")
        warnings.warn(
            f"{func.__qualname__}(): pass {', '.join(names)} by keyword ({names[0]}=...); "
            "passing it by position stops working in the next release",
            BayesevalDeprecationWarning,
            stacklevel=2,
        )
        kwargs.update(zip(names, args[len(positional):], strict=True))
        return func(*args[: len(positional)], **kwargs)

    return wrapper  # type: ignore[return-value]
