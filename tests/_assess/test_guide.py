"""docs/guide/assess.md runs, and the output it shows is the output its code prints."""

from __future__ import annotations

import pytest
from _doc_examples import DOCS, code_blocks, run_blocks

PAGE = DOCS / "guide" / "assess.md"


@pytest.mark.skipif(not PAGE.exists(), reason="not run from a source checkout")
def test_guide_page_runs_and_shows_its_output(capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace = run_blocks(PAGE)
    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    shown = [line.rstrip() for block in code_blocks(PAGE, "text") for line in block.splitlines()]
    assert printed == shown
    assert namespace["fig"].number in plt.get_fignums()
    plt.close(namespace["fig"])
