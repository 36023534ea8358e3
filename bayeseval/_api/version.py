"""The package's version: one literal, which ``pyproject.toml`` repeats (a test keeps the two equal).

A literal rather than ``importlib.metadata.version("bayeseval")``: it costs nothing at import and
stays right when the package runs from a source checkout that differs from the installed one.
``bayeseval.__version__`` is this constant; the package's own modules import it from here, so
none of them reaches up to the root package.
"""

VERSION = "0.2.0"
