"""The aggregation benchmark (rnnbench.commands.scale) stays runnable; its times are reported in
notes, not asserted."""

from rnnbench.commands import scale


def test_the_benchmark_runs_small(tmp_path):
    (tmp_path / "runs").mkdir()
    paths = scale.write_synthetic(tmp_path / "runs", 50)
    assert len(paths) == 48
    times = scale.time_aggregation(paths, tmp_path)
    assert set(times) >= {"load_results", "summarize", "findings_markdown", "total"}
    assert "## Bottom line" in (tmp_path / "FINDINGS.md").read_text()


def test_the_command_runs_small(capsys):
    from rnnbench import cli

    assert cli.main(["scale", "--results", "24", "--cells", "0"]) == 0
    assert "24 results, 2 cells:" in capsys.readouterr().out
