"""The code of the README and of the documentation's pages, for the tests that run it.

The guide (``docs/guide/*.md``) holds the examples the README used to; each page's ``python`` blocks
run in one namespace, top to bottom, as a reader would paste them.
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def code_blocks(path: pathlib.Path, language: str = "python", section: str | None = None) -> list[str]:
    """The fenced ``language`` blocks of a Markdown file, or of its ``## section`` alone.

    For ``python``, the executed cells of a myst-nb page (```` ```{code-cell} ipython3 ````) count too,
    in page order with the plain blocks.
    """
    text = path.read_text()
    if section is not None:
        text = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    fence = r"python|\{code-cell\} ipython3" if language == "python" else re.escape(language)
    return re.findall(rf"```(?:{fence})\n(.*?)\n```", text, flags=re.DOTALL)


def run_blocks(path: pathlib.Path, language: str = "python", section: str | None = None) -> dict:
    """Execute the blocks of :func:`code_blocks` in one namespace and return it."""
    namespace: dict = {}
    blocks = code_blocks(path, language, section)
    assert blocks, f"no {language} block in {path}"
    for block in blocks:
        exec(compile(block, str(path.relative_to(ROOT)), "exec"), namespace)  # noqa: S102
    return namespace
