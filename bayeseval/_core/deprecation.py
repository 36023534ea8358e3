"""Deprecation shims: keyword arguments and functions renamed to the project's vocabulary.

One implementation for the whole package: a renamed keyword keeps working for one release and
warns with :class:`~bayeseval._warnings.BayesevalDeprecationWarning` (a ``FutureWarning``, so
users see it by default). The wrapped function's signature shows only the new names
(``inspect.signature`` follows ``__wrapped__``).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from bayeseval._warnings import BayesevalDeprecationWarning

F = TypeVar("F", bound=Callable[..., Any])


def renamed_kwargs(**renames: str) -> Callable[[F], F]:
    """Accept old keyword names (``old="new"``) for one release, with a deprecation warning.

    Passing both the old and the new name is a TypeError naming both.

    Examples
    --------
    >>> import warnings
    >>> @renamed_kwargs(population_shares="weights")
    ... def total(*, weights):
    ...     return sum(weights)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     total(population_shares=[1, 2])
    3
    >>> caught[0].category.__name__, "weights" in str(caught[0].message)
    ('BayesevalDeprecationWarning', True)
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(
                        f"{func.__name__}() got both {old!r} (deprecated) and {new!r}; pass {new!r} only"
                    )
                warnings.warn(
                    f"{func.__name__}(): the argument {old!r} is renamed {new!r}; "
                    f"the old name stops working in the next release",
                    BayesevalDeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def deprecated_alias(func: F, old_name: str) -> F:
    """Return ``func`` under ``old_name``, warning on every call that the name is deprecated.

    Examples
    --------
    >>> import warnings
    >>> def stratified_total(values):
    ...     return sum(values)
    >>> total = deprecated_alias(stratified_total, "total")
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     total([1, 2])
    3
    """

    @functools.wraps(func)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old_name}() is renamed {func.__name__}(); the old name stops working in the next release",
            BayesevalDeprecationWarning,
            stacklevel=2,
        )
        return func(*args, **kwargs)

    alias.__name__ = old_name
    alias.__qualname__ = old_name
    return alias  # type: ignore[return-value]
