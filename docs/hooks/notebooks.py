"""MkDocs hook: publish the notebooks of ``notebooks/`` in the site, with offline maths.

* ``on_files`` adds every ``notebooks/*.ipynb`` of the repository to the site's files
  (as ``notebooks/<name>.ipynb``) before mkdocs-jupyter turns them into pages, so the
  notebooks stay where users and the tests find them and are not copied into ``docs/``.
* ``on_post_page`` removes the MathJax 2 loader that nbconvert's template puts in each
  notebook page (it points at a CDN); the site's bundled MathJax typesets the notebooks'
  markdown instead (see ``docs/javascripts/mathjax-config.js``).

The notebooks are committed without outputs; mkdocs-jupyter executes them at build
(``execute: true`` in ``mkdocs.yml``), so the site shows their outputs; ``on_post_page``
fails the build on a notebook page without any output.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NBCONVERT_MATHJAX = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", flags=re.DOTALL
)


@event_priority(100)   # before mkdocs-jupyter's on_files, which claims the .ipynb files
def on_files(files: Files, config, **kwargs) -> Files:
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{path.name}",
                src_dir=str(NOTEBOOKS.parent),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_post_page(output: str, page, config, **kwargs) -> str:
    if page.file.src_uri.endswith(".ipynb"):
        if "jp-OutputArea-output" not in output:
            raise PluginError(f"{page.file.src_uri} rendered without outputs: was it executed?")
        return NBCONVERT_MATHJAX.sub("", output)
    return output
