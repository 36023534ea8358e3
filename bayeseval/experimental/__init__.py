"""Experimental features: no stability promise.

What lives here may change its signature, its defaults or its results, or disappear, in any
release, without a deprecation period (as scikit-learn's and fairlearn's ``experimental``
modules). A function or option belongs here while it has no validated guarantee: no
coverage or error rate measured against an independent reference in ``docs/validation.md``,
or no test that could fail against such a reference. It leaves this namespace for a stable
package once it has one, and the stable name is then the only one.

Rules:

* code here may import any public stage of the package; no stable package imports from here
  (``tests/meta/test_layers.py``);
* every public name is imported under ``if TYPE_CHECKING:`` below and listed in this
  package's ``__all__``, its module's ``__all__`` and the API page, like any other, with a
  numpydoc docstring and an example;
* a docstring here says what is not yet known (which figure is missing) rather than
  claiming one.

The namespace holds nothing at present: every public function of the package has a measured
figure or a test against an independent reference.
"""

from __future__ import annotations

from bayeseval._api.lazy import lazy_exports

__all__: list[str] = []

__getattr__, __dir__ = lazy_exports(__name__)
