"""Chart specs: each chart encodes the quantities it promises (rnnbench.report.charts)."""

import json

import pandas as pd
import pytest

from rnnbench.report import chartlist, chart_parts, charts
from rnnbench.results import load
from rnnbench.stats.summary import cumulative_time, summarize
from conftest import make_result
from test_results import hand_made_runs, write_results


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The hand-made summary and cumulative table, computed once (the bootstraps take seconds);
    charts only read them."""
    summary = summarize(
        load.load_results(hand_made_runs(tmp_path_factory.mktemp("charts"))),
        peak_flop_per_s={(1, "2.21"): 1e9})
    return summary, cumulative_time(summary)


def layers(spec):
    inner = spec["spec"]
    return inner.get("layer", [inner])


def encodings(spec):
    return [layer["encoding"] for layer in layers(spec)]


def test_setup_time_chart(tables):
    spec = charts.build_chart("setup_time", *tables).to_dict()
    line, bars = encodings(spec)
    assert line["x"]["field"] == "max_len" and line["y"]["field"] == "geomean"
    assert line["y"]["scale"]["type"] == "log"
    assert line["color"]["field"] == "impl"
    assert (bars["y"]["field"], bars["y2"]["field"]) == ("ci_low", "ci_high")
    assert spec["facet"]["column"]["field"] == "sequence_length"
    data = spec["datasets"][spec["data"]["name"]]
    static_c1 = [r for r in data if r["impl"] == "static" and r["max_len"] == 10]
    assert static_c1[0]["geomean"] == pytest.approx(3.5)  # the summary's setup_s


def test_roofline_chart(tables):
    spec = charts.build_chart("roofline", *tables).to_dict()
    line, bars, rule, above = encodings(spec)
    assert line["y"]["field"] == "geomean" and line["y"]["scale"]["type"] == "log"
    assert rule["y"]["field"] == "peak" and rule["y"]["aggregate"] == "max"
    # static's and dynamic's bars side by side in each max_len's band
    assert bars["xOffset"]["field"] == "impl" and bars["x"]["type"] == "ordinal"
    data = spec["datasets"][spec["data"]["name"]]
    static_c1 = [r for r in data if r["impl"] == "static" and r["max_len"] == 10]
    # hand-made results: 1e6 FLOP per step in 0.01 s = 0.1 GFLOP/s; the peak 1e9 = 1 GFLOP/s
    assert static_c1[0]["geomean"] == pytest.approx(0.1) and static_c1[0]["peak"] == 1.0
    # nothing above the peak here: no flag; a peak below the achieved rates: flagged
    assert "above peak" not in str(spec["title"])
    assert above["text"]["value"] == "above peak"
    low_peak = tables[0].assign(peak_flop_per_s=1e7)  # 0.01 GFLOP/s, under every cell's
    flagged = charts.build_chart("roofline", low_peak, None).to_dict()
    assert "'above peak': 4 achieved rate(s) above it" in str(flagged["title"])


def test_steps_per_s_chart(tables):
    spec = charts.build_chart("steps_per_s", *tables).to_dict()
    line, _ = encodings(spec)
    assert line["y"]["field"] == "geomean" and "steps/s" in line["y"]["title"]
    data = spec["datasets"][spec["data"]["name"]]
    dynamic_c1 = [r for r in data if r["impl"] == "dynamic" and r["max_len"] == 10]
    assert dynamic_c1[0]["geomean"] == pytest.approx(50.0)  # 1 / 0.02 s


def test_cumulative_time_chart_marks_breakeven(tables):
    spec = charts.build_chart("cumulative_time", *tables).to_dict()
    band, line, rule = encodings(spec)  # the band behind the lines
    assert (line["x"]["field"], line["y"]["field"]) == ("steps", "total_s")
    assert rule["x"]["field"] == "breakeven_steps"
    assert layers(spec)[2]["mark"]["type"] == "rule"
    assert (band["x"]["field"], band["x2"]["field"]) == ("band_low", "band_high")
    # one translucent rectangle per panel, not one per row (which would stack into an
    # opaque block that hides the lines)
    assert layers(spec)[0]["mark"]["opacity"] < 0.5
    assert "datum.steps == 0 && datum.impl == 'static'" in layers(spec)[0]["transform"][0]["filter"]
    data = spec["datasets"][spec["data"]["name"]]
    assert {r["breakeven_steps"] for r in data if r["cell_id"] == "c1"} == {301}
    # c1's repeats are identical: the band is the break-even step itself
    assert {(r["band_low"], r["band_high"]) for r in data if r["cell_id"] == "c1"} == {(301, 301)}


def test_ratio_heatmap_chart(tables):
    spec = charts.build_chart("ratio_heatmap", *tables).to_dict()
    rect, text = encodings(spec)
    # coloured by the ratio where clear (datum.clear), grey where not
    colour = rect["color"]["condition"]
    assert (colour["test"], colour["field"]) == ("datum.clear", "ratio")
    assert colour["scale"]["domainMid"] == 1 and rect["color"]["value"] == "#d9d9d9"
    assert (rect["x"]["field"], rect["y"]["field"]) == ("max_len", "sequence_length")
    data = spec["datasets"][spec["data"]["name"]]
    step = [r for r in data if r["quantity"] == "step time ratio" and r["max_len"] == 10]
    assert step[0]["ratio"] == pytest.approx(0.5)
    assert (step[0]["clear"], step[0]["label"]) == (True, "0.50")  # coloured
    # the most extreme clear ratio is drawn darkest: its number white
    assert step[0]["dark"] and text["color"]["condition"]["test"] == "datum.dark"
    # an interval across 1: drawn neutral (grey), starred
    unclear = tables[0].assign(ratio_median_step_s_ci_low=0.4, ratio_median_step_s_ci_high=1.2)
    spec = charts.build_chart("ratio_heatmap", unclear, None).to_dict()
    step = [r for r in spec["datasets"][spec["data"]["name"]]
            if r["quantity"] == "step time ratio" and r["max_len"] == 10]
    assert (bool(step[0]["clear"]), step[0]["label"]) == (False, "0.50*")


def test_unknown_chart():
    with pytest.raises(ValueError, match="'pie'"):
        charts.build_chart("pie", None, None)


@pytest.mark.slow
def test_saved_html_works_offline(tables, tmp_path):
    chart = charts.build_chart("ratio_heatmap", *tables)
    charts.save_chart(chart, str(tmp_path / "c.html"), str(tmp_path / "c.svg"))
    html = (tmp_path / "c.html").read_text()
    assert "<script src=" not in html and "cdn.jsdelivr" not in html
    assert "vegaEmbed" in html
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<svg")
    json.dumps(chart.to_dict())  # serialisable spec
    # the same chart in a child process, after this one's renderer has started (a forked
    # child of a process whose V8 runs would hang); a child that fails leaves no file
    apart = [str(tmp_path / "apart.html"), str(tmp_path / "apart.svg")]
    assert charts.save_chart_apart(chart, *apart) == (0, [])
    assert (tmp_path / "apart.svg").read_text() == (tmp_path / "c.svg").read_text()
    code, lines = charts.save_chart_apart(chart, str(tmp_path / "x.html"),
                                          str(tmp_path / "no/such/folder/x.svg"))
    assert code == 1 and "FileNotFoundError" in lines[-1] and not (tmp_path / "x.html").exists()


def test_ablation_chart_compares_each_value_with_the_reference(tmp_path):
    """c1 at fetches loss and hooks_cold (whose mean step carries one slow step), read back
    from CSV as the plot rule does; the chart shows both values per implementation."""
    records = []
    for repeat in (1, 2):
        for impl in ("static", "dynamic"):
            records.append(make_result(impl, "c1", repeat, step_s=(0.01,) * 3))
            records.append(make_result(impl, "c1_fhookscold", repeat, fetches="hooks_cold",
                                       step_s=(0.31, 0.01, 0.01)))
    summary = summarize(load.load_results(write_results(tmp_path, records)))
    summary.to_csv(tmp_path / "summary.csv", index=False)
    summary = load.read_table(tmp_path / "summary.csv")
    assert summary.set_index("cell_id").loc["c1", "ablations"] == ""  # not NaN after the CSV
    spec = charts.build_chart("ablation_fetches", summary, None).to_dict()
    points, bars = encodings(spec)
    assert points["x"]["field"] == "value" and points["x"]["sort"][0] == "loss"
    assert (bars["y"]["field"], bars["y2"]["field"]) == ("ci_low", "ci_high")
    data = spec["datasets"][spec["data"]["name"]]
    mean = {r["value"]: r["geomean"] for r in data
            if r["impl"] == "static" and r["quantity"] == "mean step (s)"}
    assert mean == {"loss": pytest.approx(0.01), "hooks_cold": pytest.approx(0.11)}
    with pytest.raises(ValueError, match="does not vary swap_memory"):
        charts.build_chart("ablation_swap_memory", summary, None)


def test_tf_version_chart_puts_the_same_cell_in_each_version(tmp_path):
    """c1 at 2.21 and at 2.12 (slower steps), read back from CSV as the plot rule does: one
    panel for the cell, a point per version, versions in release order (2.9 before 2.12)."""
    records = []
    for cell_id, version, step in (("c1", "2.21", 0.01), ("c1_tf2.12", "2.12", 0.03),
                                   ("c1_tf2.9", "2.9", 0.02)):
        for impl in ("static", "dynamic"):
            records += [make_result(impl, cell_id, r, tf_version=version, step_s=(step,) * 3)
                        for r in (1, 2)]
    summary = summarize(load.load_results(write_results(tmp_path, records)))
    summary.to_csv(tmp_path / "summary.csv", index=False)
    summary = load.read_table(tmp_path / "summary.csv")
    spec = charts.build_chart("tf_version", summary, None).to_dict()
    points, bars = encodings(spec)
    assert points["x"]["field"] == "tf_version" and points["x"]["sort"] == ["2.9", "2.12", "2.21"]
    data = spec["datasets"][spec["data"]["name"]]
    assert len({r["panel"] for r in data}) == 1  # the version is not in the panel's label
    step = {r["tf_version"]: r["geomean"] for r in data
            if r["impl"] == "static" and r["quantity"] == "median step (s)"}
    assert step == {"2.21": pytest.approx(0.01), "2.12": pytest.approx(0.03),
                    "2.9": pytest.approx(0.02)}
    with pytest.raises(ValueError, match="two TensorFlow versions"):
        charts.build_chart("tf_version", summary[summary["tf_version"] == "2.12"], None)


def test_facets_and_axes_sort_numbers_by_value():
    """Vega-Lite sorts nominal values as strings (bs256 before bs64 before bs8)."""
    from rnnbench.report import chart_parts

    assert chart_parts.natural_order(pd.Series(["cell bs256 nu8", "cell bs8 nu8", "cell bs64 nu8",
                                           "cell bs8 nu8"])) == [
        "cell bs8 nu8", "cell bs64 nu8", "cell bs256 nu8"]
    assert chart_parts.natural_order(pd.Series(["5", "full", "12"])) == ["5", "12", "full"]


def test_rows_beside_columns_sort_by_a_key_not_by_a_list(tables):
    """Vega-Lite misplaces panels where a row facet has an explicit sort and a column facet
    lacks some (row, column) pair (chart_parts.ordered_row): such rows sort by a keyed label."""
    keyed, row = chart_parts.ordered_row(pd.DataFrame({"v": ["c bs256", "c bs8", "c bs64", "c bs8"]}),
                                    "v")
    assert sorted(set(keyed["v_key"])) == ["0000 c bs8", "0001 c bs64", "0002 c bs256"]
    assert row.to_dict()["header"]["labelExpr"] == "substring(datum.value, 5)"  # the label
    faceted = 0
    for name in ("setup_time", "steps_per_s", "ratio_heatmap", "cumulative_time"):
        spec = charts.build_chart(name, *tables).to_dict()
        facet = spec["facet"]
        if "column" in facet:
            faceted += 1
            assert "sort" not in facet["row"] and facet["row"]["field"].endswith("_key")
            keys = sorted({r[facet["row"]["field"]] for r in spec["datasets"][spec["data"]["name"]]})
            assert [key[5:] for key in keys] == chart_parts.natural_order(pd.Series([k[5:] for k in keys]))
    assert faceted == 4


def test_the_api_chart_puts_each_api_on_its_own_x(tables):
    # on a grid of one max_len (presets/keras-cpu.yaml) a max_len axis put every api on one x
    one = tables[0][tables[0]["max_len"] == tables[0]["max_len"].iloc[0]]
    summary = pd.concat([one.assign(api=api, cell_id=one["cell_id"] + suffix,
                                    base_cell_id=one["base_cell_id"] + suffix)
                         for api, suffix in (("jax_scan", "_jaxscan"), ("compat_v1", ""),
                                             ("keras_jax", "_kerasjax"))])
    spec = charts.build_chart("api", summary, None).to_dict()
    points, bars = spec["spec"]["layer"]
    for layer in (points, bars):
        assert layer["encoding"]["x"]["field"] == "api"
        assert layer["encoding"]["x"]["sort"] == ["compat_v1", "keras_jax", "jax_scan"]
        assert layer["encoding"]["xOffset"]["field"] == "impl"
    assert spec["facet"]["column"]["sort"] == ["setup (s)", "median step (s)"]
    data = spec["datasets"][spec["data"]["name"]]
    assert {row["api"] for row in data} == {"compat_v1", "keras_jax", "jax_scan"}
    assert all(f"max_len {row['max_len']}," in row["panel"] for row in data)


def test_setup_split_chart_stacks_the_phases_per_implementation(tables):
    spec = charts.build_chart("setup_split", *tables).to_dict()
    (bars,) = encodings(spec)
    assert bars["x"]["field"] == "shape" and bars["xOffset"]["field"] == "impl"
    assert bars["y"]["field"] == "seconds" and bars["y"]["aggregate"] == "sum"  # stacked
    assert bars["color"]["field"] == "part" and bars["order"]["field"] == "order"
    data = spec["datasets"][spec["data"]["name"]]
    c1 = {r["part"]: r["seconds"] for r in data if r["impl"] == "static" and r["shape"] == "ml 10, sl 5"}
    # hand-made c1: graph construction 1, session setup 0.5, first step 2 of which Grappler
    # timed alone 1.5; compat_v1's words
    assert c1 == {"graph construction": pytest.approx(1.0), "session setup": pytest.approx(0.5),
                  "Grappler (timed alone)": pytest.approx(1.5),
                  "first step (rest)": pytest.approx(0.5)}
    assert "static_rnn" in spec["title"]


def test_each_api_gets_its_own_words(tables):
    summary = tables[0].assign(api="keras")
    assert "setup: tracing + model setup + first call" in str(
        charts.build_chart("setup_time", summary, None).to_dict()["title"])
    # Keras: Grappler is not timed alone (NaN), and the first call is not split
    unsplit = summary.assign(**{f"{impl}_{part}": float("nan") for impl in ("static", "dynamic")
                                for part in ("optimisation_s", "first_step_rest_s")})
    split = charts.build_chart("setup_split", unsplit, None).to_dict()
    parts = {(r["part"], r["seconds"]) for r in split["datasets"][split["data"]["name"]]
             if r["impl"] == "static" and r["shape"] == "ml 10, sl 5"}
    assert parts == {("tracing", 1.0), ("model setup", 0.5), ("first call", 2.0)}
    assert charts.build_chart("ratio_heatmap", summary, None).to_dict()["title"]["text"] == (
        "unroll=True / unroll=False (above 1: static slower)")
    mixed = pd.concat([tables[0], summary.assign(cell_id=summary["cell_id"] + "_keras")])
    assert charts.build_chart("ratio_heatmap", mixed, None).to_dict()["title"]["text"].startswith(
        "static / dynamic (static_rnn / dynamic_rnn; unroll=True / unroll=False)")
    inference = tables[0].assign(mode="inference")
    assert charts.build_chart("steps_per_s", inference, None).to_dict()["title"]["text"] == (
        "Steady-state speed, inference steps per second")


def test_ratio_chart_puts_the_ratio_against_a_varied_axis(tmp_path):
    """c at batch_size 8, 64 and 256 (static's steps 2x, 1x, 0.5x dynamic's), read back
    from CSV as the plot rule does: one panel, x in numeric order on a log scale, one shared
    log y, the ratio with its interval per quantity."""
    records = []
    for batch_size, ratio in ((8, 2.0), (64, 1.0), (256, 0.5)):
        for repeat in (1, 2, 3):
            jitter = 1 + 0.01 * repeat
            records.append(make_result("static", f"c_bs{batch_size}", repeat,
                                       batch_size=batch_size, step_s=(0.01 * ratio * jitter,) * 3))
            records.append(make_result("dynamic", f"c_bs{batch_size}", repeat,
                                       batch_size=batch_size, step_s=(0.01 * jitter,) * 3))
    summary = summarize(load.load_results(write_results(tmp_path, records)))
    summary.to_csv(tmp_path / "summary.csv", index=False)
    summary = load.read_table(tmp_path / "summary.csv")
    spec = charts.build_chart("ratio_batch_size", summary, None).to_dict()
    rule, bars, line = encodings(spec)
    assert line["x"]["field"] == "batch_size" and line["x"]["scale"]["type"] == "log"
    assert line["x"]["axis"]["values"] == [8, 64, 256]
    assert line["y"]["field"] == "ratio" and line["y"]["scale"]["type"] == "log"
    assert (bars["y"]["field"], bars["y2"]["field"]) == ("ci_low", "ci_high")
    assert rule["y"] == {"datum": 1}
    assert "resolve" not in spec  # one y scale for every panel
    data = spec["datasets"][spec["data"]["name"]]
    step = {r["batch_size"]: r["ratio"] for r in data if r["quantity"] == "median step"}
    assert step == {8: pytest.approx(2.0), 64: pytest.approx(1.0), 256: pytest.approx(0.5)}
    assert {r["panel"] for r in data} == {"every cell"}
    with pytest.raises(ValueError, match="does not vary num_units"):
        charts.build_chart("ratio_num_units", summary, None)


EVERY_GRID = ["setup_time", "steps_per_s", "cumulative_time", "ratio_heatmap", "roofline",
              "setup_split"]


def test_plots_are_the_charts_of_what_a_grid_varies():
    """chartlist.plots: every grid's charts, then one per thing it varies, in the workflow's
    order; each a chart rule plot can make (ALL_CHARTS)."""
    from test_grid import default_config, shipped_config

    from rnnbench.grid import cells as grid_cells

    config = shipped_config()
    cells = grid_cells.cells(config).values()
    assert chartlist.plots(cells, ["2.21"], config["api"]) == [*EVERY_GRID, "ablation_loop_bound"]
    wide = default_config(max_len=[10, 20], sequence_length=[2], api=["compat_v1", "jax_scan"],
                          meta_optimizer=["on", "off"])
    wide_cells = list(grid_cells.cells(wide).values())
    charts = chartlist.plots(wide_cells, ["2.12", "2.21"], wide["api"])
    assert charts == [*EVERY_GRID, "ablation_meta_optimizer", "api", "tf_version",
                      "ratio_max_len", "jax_unroll"]
    assert set(charts) <= set(chartlist.ALL_CHARTS)
    crossing = default_config(max_len=[10, 20], sequence_length=[2, "max_len"])
    assert chartlist.plots(grid_cells.cells(crossing).values(), ["2.21"], ["compat_v1"])[-2:] \
        == ["ratio_max_len", "crossover"]


def test_every_chart_has_its_own_report_caption():
    """workflow/report/plot.rst is the registry's captions (chartlist.plot_rst), and rendered
    as Snakemake's report renders it (Jinja2, the chart wildcard) gives each chart of
    chartlist.ALL_CHARTS a caption of its own but the ablation family's 'Ablation <axis>'."""
    import types

    import jinja2

    from conftest import REPO

    text = (REPO / "workflow" / "report" / "plot.rst").read_text()
    assert text == chartlist.plot_rst(), "python3 -m rnnbench.report.chartlist > workflow/report/plot.rst"
    template = jinja2.Template(text)
    captions = {chart: template.render(snakemake=types.SimpleNamespace(
        wildcards=types.SimpleNamespace(chart=chart))).strip()
        for chart in chartlist.ALL_CHARTS}
    ablation = {chart for chart, text in captions.items() if text.startswith("Ablation ")}
    assert ablation == {chart for chart in captions if chart.startswith("ablation_")}
    assert "Ablation loop_bound:" in captions["ablation_loop_bound"]
    others = [text for chart, text in captions.items() if chart not in ablation]
    assert all(others) and len(set(others)) == len(others)
    assert "against max_len" in captions["ratio_max_len"]


def test_every_chart_kind_is_drawn_and_named_in_the_results_readme():
    from conftest import REPO

    readme = (REPO / "results" / "README.md").read_text()
    for chart in chartlist.CHARTS:
        assert callable(chartlist.draw_function(chart)), chart.draw
        assert f"`{chart.name}" in readme, chart.name
    with pytest.raises(ValueError, match="unknown chart 'ratio_depth'"):
        chartlist.chart_of("ratio_depth")
