"""Griffe extension: render the Sphinx markup of bayeseval's docstrings in the mkdocs site.

The docstrings are written for numpydoc and use Sphinx roles and directives, which
mkdocstrings would print verbatim. Before mkdocstrings renders a docstring this extension
rewrites

* ``:func:`name```, ``:class:``, ``:meth:``, ``:attr:``, ``:mod:``, ``:data:``, ``:obj:``
  and ``:exc:`` (with or without ``~``) into an optional mkdocs-autorefs cross-reference:
  a link when the target is documented in the site, plain code otherwise (no warning);
  short names are resolved in the scope of the documented object, as Sphinx does;
* ``:math:`x``` into ``\\(x\\)`` and a ``.. math::`` block into a ``$$ ... $$`` block, both
  typeset by pymdownx.arithmatex and the bundled MathJax.

A docstring that is a template completed at import time (a line such as
``{spec_parameters}``, filled in by ``bayeseval.campaign.spec``) is replaced by the
docstring of the imported object first, so the site shows what ``help()`` shows.

Configured in ``mkdocs.yml`` under the python handler's ``extensions`` option; the
docstrings in the package are not changed.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import textwrap

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc):`(~?)([^`]+?)`")
MATH = re.compile(r":math:`([^`]+)`")
DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$")
PLACEHOLDER = re.compile(r"^[ \t]*\{\w+\}[ \t]*$", flags=re.MULTILINE)
UNRESOLVED = (
    KeyError,
    ValueError,
    griffe.AliasResolutionError,
    griffe.CyclicAliasError,
    griffe.NameResolutionError,
)


def _runtime_docstring(obj: griffe.Object) -> str:
    """The docstring of the imported object (for docstrings completed at import time)."""
    target = importlib.import_module(obj.module.path)
    for name in obj.path.removeprefix(obj.module.path).strip(".").split("."):
        target = getattr(target, name) if name else target
    return inspect.getdoc(target) or ""


def _canonical(obj: griffe.Object, name: str) -> str:
    """Full import path of ``name`` as seen from ``obj`` (``name`` itself if unknown)."""
    head, _, tail = name.partition(".")
    try:
        path = obj.resolve(head)
    except UNRESOLVED:
        path = head
    full = f"{path}.{tail}" if tail else path
    try:
        target = obj.modules_collection[full]
        return target.final_target.path if target.is_alias else target.path
    except UNRESOLVED:
        return full


def _role(obj: griffe.Object, match: re.Match[str]) -> str:
    short, name = match.group(1) == "~", match.group(2).strip()
    name = name.removesuffix("()")
    title = name.rsplit(".", 1)[-1] if short else name
    identifier = html.escape(_canonical(obj, name), quote=True)
    return f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}</code></autoref>'


def _math_blocks(text: str) -> str:
    """Turn every ``.. math::`` directive (and its indented body) into a ``$$`` block."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        match = DIRECTIVE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent, body = match.group("indent"), [match.group("first")]
        i += 1
        while i < len(lines) and (not lines[i].strip() or _deeper(lines[i], indent)):
            body.append(lines[i])
            i += 1
        while body and not body[-1].strip():
            i -= 1   # leave trailing blank lines to the text that follows
            body.pop()
        maths = textwrap.dedent("\n".join(line for line in body if line.strip())).strip()
        out += ["", f"{indent}$$", *(f"{indent}{line}" for line in maths.splitlines()), f"{indent}$$"]
    return "\n".join(out)


def _deeper(line: str, indent: str) -> bool:
    return len(line) - len(line.lstrip()) > len(indent)


def rewrite(obj: griffe.Object, text: str) -> str:
    """Return ``text`` with its Sphinx roles and math directives in mkdocs markup.

    Examples
    --------
    >>> import griffe
    >>> module = griffe.Module("demo")
    >>> rewrite(module, "Rate :math:`s/n` of :func:`~scipy.stats.binom`.")
    'Rate \\\\(s/n\\\\) of <autoref identifier="scipy.stats.binom" optional><code>binom</code></autoref>.'
    """
    text = _math_blocks(text)
    text = MATH.sub(lambda m: f"\\({m.group(1)}\\)", text)
    return ROLE.sub(lambda m: _role(obj, m), text)


class SphinxRoles(griffe.Extension):
    """Rewrite the docstring of every loaded object (see the module docstring)."""

    def on_object(self, *, obj: griffe.Object, **kwargs: object) -> None:  # noqa: D102
        if obj.docstring is None:
            return
        if PLACEHOLDER.search(obj.docstring.value):
            obj.docstring.value = _runtime_docstring(obj)
        obj.docstring.value = rewrite(obj, obj.docstring.value)
