"""The README's answer and the docs come from the committed reference run (docs/figures/),
and the layout page matches the tree."""

import re
import subprocess

from conftest import REPO
from rnnbench import reference


def test_the_readme_answer_is_the_reference_runs():
    """Fails when the README's numbers differ from docs/figures/ (rerun rnnbench reference)."""
    readme = (REPO / "README.md").read_text()
    assert reference.ANSWER_BEGIN == "<!-- answer: written by rnnbench reference -->"
    assert reference.readme_answer(readme) == reference.expected_answer()
    # the answer is on the first screen: within the first 40 lines
    assert readme.index(reference.ANSWER_END) < len("\n".join(readme.splitlines()[:40]))


def test_the_readme_answer_reads_in_short_sentences_that_start_with_the_choice():
    """Issue 24: a practitioner reads the choice first, in sentences of at most 35 words."""
    block = reference.readme_answer((REPO / "README.md").read_text())
    prose = block.split("\n", 1)[1].split("```")[0]
    sentences = [s for s in re.split(r"(?<=[.*])\s+", prose.strip()) if s]
    assert sentences[0].startswith("**Use ") and len(sentences) >= 4
    long = [s for s in sentences if len(s.split()) > 35]
    assert not long, long
    # the measured shape in words, the break-even in seconds, memory in MiB
    assert "a basic_lstm of 32 units, batch 32, 16 inputs, padded to max_len 24" in prose
    assert re.search(r"steps, about \d+ s of training here", prose)
    assert re.search(r"\(\d+ MiB against \d+ MiB at peak\)", prose)


def test_every_figure_and_link_of_the_readme_and_docs_exists():
    for page in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.name}: {target}"


def test_the_layout_page_matches_the_tree():
    """Every entry the layout names exists, and every tracked top-level entry and every
    module of the package is named."""
    text = (REPO / "docs" / "layout.md").read_text()
    block = text[text.index("```") + 3:text.rindex("```")]
    named = [line.split()[0] for line in block.splitlines()
             if line.strip() and not line.startswith(" ")]
    for entry in named:
        if "*" not in entry:
            assert (REPO / entry).exists(), entry
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    for top in {path.split("/")[0] for path in tracked}:
        assert any(name.rstrip("/").split("/")[0] == top for name in named), top
    package = REPO / "workflow/scripts/rnnbench"
    for module in package.rglob("*.py"):  # each module in the package's table, by its name
        name = module.relative_to(package).with_suffix("").as_posix()
        if not module.stem.startswith("__"):  # __init__, __main__
            assert f"`{name}`" in text, name
