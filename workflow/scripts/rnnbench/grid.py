"""Expand a validated config into the experiment grid: cells, datasets and run targets.

A *cell* is one combination of the grid axes (CELL_AXES: cell, batch_size, max_len,
sequence_length, num_units, input_dim, api, tf_version, and the ablation axes of
ABLATION_DEFAULTS).
Both implementations, static_rnn and dynamic_rnn, run on every cell.
A *dataset* is one distinct data shape; cells that differ only in cell type, batch_size or
an ablation share it. The *protocol* holds the settings that change a timing but are not
grid axes (device, steps, warm-up, hook_every, num_samples, seed); it names the results
folder, so a new protocol never overwrites results measured under another.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from rnnbench.container import DEFAULT_TF_VERSION, tf_version_key  # noqa: F401

CONFIG_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "config.schema.yaml"
IMPLEMENTATIONS = ("static", "dynamic")
MAX_TRAINING_JOBS = 20_000  # Snakemake's DAG for far more jobs takes minutes and gigabytes
MAX_DATASET_BYTES = 8 * 2**30  # inputs float32 [num_samples, max_len, input_dim] in memory
# Ablation axes and their reference values: TensorFlow's own behaviour, the seed's fetches
# (train_op and loss every step) and parallel_iterations (batch_size), one thread. A cell id
# names an ablation only where it differs from these, so the ids of a grid without
# ablations do not change when an axis is added.
ABLATION_DEFAULTS = {
    "loop_bound": "batch_max",
    "pass_sequence_length": True,
    "meta_optimizer": "on",
    "fetches": "loss",
    "parallel_iterations": "batch_size",
    "swap_memory": False,
    "intra_op_parallelism_threads": 1,
    "inter_op_parallelism_threads": 1,
    "mode": "train",
    "unroll": "max_len",
}
CELL_AXES = ("cell", "batch_size", "max_len", "sequence_length", "num_units", "input_dim", "api",
             "tf_version", *ABLATION_DEFAULTS)
# The APIs a cell can be written in (rnnbench.model: compat_v1; rnnbench.keras_model: keras,
# keras_xla), and their id suffixes (compat_v1, the original, adds none).
RATIO_CLAIM_API = "compat_v1"
"""The api whose cells a ratio claim (static against dynamic in a cell) is judged in: the
seeds' claims are about static_rnn and dynamic_rnn (findings.claim_table, compare.compare;
config_warnings names the ratio claims of a grid without such a cell)."""
API_SUFFIXES = {"compat_v1": "", "keras": "_keras", "keras_xla": "_kerasxla",
                "keras_jax": "_kerasjax", "jax_scan": "_jaxscan"}
JAX_APIS = ("keras_jax", "jax_scan")
"""The apis on JAX (bench._run_jax): their jobs never import TensorFlow, and the TensorFlow
jobs of the other apis never import JAX (bench.keep_jax_out)."""
# Each api's own words for the two implementations and the setup phases (bench: compat_v1
# builds a graph and a Session; the keras apis trace a tf.function and compile it on its first
# call), for tables, chart titles and FINDINGS.
API_WORDS = {
    "compat_v1": {"static": "static_rnn", "dynamic": "dynamic_rnn",
                  "graph_construction_s": "graph construction",
                  "session_setup_s": "session setup", "first_step_s": "first step",
                  "graph_optimisation_s": "Grappler (timed alone)",
                  "first_step_rest_s": "first step (rest)"},
    "keras": {"static": "unroll=True", "dynamic": "unroll=False",
              "graph_construction_s": "tracing", "session_setup_s": "model setup",
              "first_step_s": "first call", "graph_optimisation_s": "Grappler (timed alone)",
              "first_step_rest_s": "first call (rest)"},
    "keras_xla": {"static": "unroll=True", "dynamic": "unroll=False",
                  "graph_construction_s": "tracing", "session_setup_s": "model setup",
                  "first_step_s": "first call (XLA compilation)",
                  "graph_optimisation_s": "Grappler (timed alone)",
                  "first_step_rest_s": "first call (rest)"},
    "keras_jax": {"static": "unroll=True", "dynamic": "unroll=False",
                  "graph_construction_s": "tracing and lowering",
                  "session_setup_s": "model setup",
                  "first_step_s": "XLA compilation + first call",
                  "graph_optimisation_s": "XLA compilation", "first_step_rest_s": "first call"},
    "jax_scan": {"static": "scan unroll=k", "dynamic": "scan unroll=1",
                 "graph_construction_s": "tracing and lowering",
                 "session_setup_s": "parameter setup",
                 "first_step_s": "XLA compilation + first call",
                 "graph_optimisation_s": "XLA compilation", "first_step_rest_s": "first call"},
}
# Ablation axes that change dynamic_rnn only: static_rnn's graph and steps are the same at
# every value (it has no while loop), so a cell away from its reference in these axes alone
# reuses the reference cell's static runs (shared_runs) instead of measuring them again.
STATIC_INVARIANT_AXES = ("loop_bound", "parallel_iterations", "swap_memory")
# Ablations that only tf.compat.v1's static_rnn / dynamic_rnn and Session have: a keras cell
# away from these defaults is left out of the grid (cells()).
COMPAT_V1_ONLY = ("loop_bound", "fetches", "parallel_iterations", "swap_memory")
# Ablations the JAX apis lack besides those (no Grappler), and the one only jax_scan has (the
# scan's unroll factor of static): cells away from these references in another api are left out.
TENSORFLOW_ONLY = ("meta_optimizer",)
JAX_ONLY = ("unroll",)
# Ablation axes that change static alone (dynamic is always unroll=1): a cell away from its
# reference in these alone reuses the reference cell's dynamic runs (shared_runs).
DYNAMIC_INVARIANT_AXES = ("unroll",)
MODES = {
    "train": "training steps",
    "inference": "inference (forward pass alone)",
}
"""The mode axis: what a measured step runs. train: forward, backward and Adam (the seed's);
inference: the forward pass and the loss, no gradient or optimizer in the graph (the same
graph construction or tracing, first call and steady steps). Inference fetches the loss
alone, so a cell with mode inference and fetches other than loss is left out (cells())."""
FETCHES = {
    "train_op": "train_op fetched alone",
    "loss": "train_op and loss",
    "hooks": "the Estimator's hook fetches",
    "hooks_cold": "hook fetches not warmed up",
}
"""The fetches axis: what each training step fetches (fetch_plan), in words."""


def api_words(apis: Iterable[str], key: str) -> str:
    """The words of ``key`` (a key of API_WORDS' entries: static, dynamic or a phase's
    timing) for the ``apis`` of a table or chart: the distinct words in API_WORDS order,
    joined by ' / ' ('graph construction / tracing'). Raises KeyError for an unknown api or
    key."""
    present = set(apis)
    unknown = present - set(API_WORDS)
    if unknown:
        raise KeyError(f"unknown api {sorted(unknown)}")
    return " / ".join(dict.fromkeys(words[key] for api, words in API_WORDS.items()
                                    if api in present))


def impl_words(apis: Iterable[str]) -> str:
    """'static_rnn / dynamic_rnn' for compat_v1 alone, 'unroll=True / unroll=False' for the
    keras apis alone, and for a mix 'static / dynamic (static_rnn / dynamic_rnn; unroll=True /
    unroll=False)': how a ratio of the two implementations is named for ``apis``."""
    pairs = list(dict.fromkeys(f"{API_WORDS[a]['static']} / {API_WORDS[a]['dynamic']}"
                               for a in API_WORDS if a in set(apis)))
    return pairs[0] if len(pairs) == 1 else f"static / dynamic ({'; '.join(pairs)})"


PROTOCOL_KEYS = ("steps", "min_measure_s", "warmup_steps", "max_warmup_steps", "hook_every",
                 "device", "seed", "grappler_alone")
"""The config keys a training job's protocol holds (bench.run's ``protocol``, with
log_every): the rules train_static / train_dynamic and jax_standalone.py pass these."""


def fetch_plan(fetches: str, hook_every: int, warmup_steps: int, steps: int) -> list[bool]:
    """Which steps fetch the hook set: one bool per step, the first step, then the
    ``warmup_steps`` warm-up steps, then the ``steps`` measured ones (True: the every-step
    fetches plus the hook tensors); hook_step of each.

    Raises:
        ValueError: for an unknown ``fetches`` (names it).
    """
    return [hook_step(fetches, hook_every, warmup_steps, k)
            for k in range(1 + warmup_steps + steps)]


def hook_step(fetches: str, hook_every: int, warmup_steps: int | None, k: int) -> bool:
    """Whether step k (0 = the first step, then the warm-up's, then the measured ones) fetches
    the hook set, after a warm-up of ``warmup_steps`` steps (None: still warming up).

    - ``loss`` / ``train_op``: never (one fetch set throughout).
    - ``hooks``: as the seed's Estimator, whose hooks fire on the first step and then every
      ``hook_every`` steps (LoggingTensorHook, SummarySaverHook with save_summary_steps):
      when k % hook_every == 0. The every-step set first runs in the first warm-up step, so
      both sets are warmed up before the measurement.
    - ``hooks_cold``: the pitfall: the first step and the warm-up never fetch the hook set;
      measured step j = k - 1 - warmup_steps does when j % hook_every == 0, so the first
      measured step is the hook set's first run.

    Raises:
        ValueError: for an unknown ``fetches`` (names it).
    """
    if fetches in ("loss", "train_op"):
        return False
    if fetches == "hooks":
        return k % hook_every == 0
    if fetches == "hooks_cold":
        measured = None if warmup_steps is None else k - 1 - warmup_steps
        return measured is not None and measured >= 0 and measured % hook_every == 0
    raise ValueError(f"fetches: {fetches!r} is not one of loss, train_op, hooks, hooks_cold")


CHARTS = ("setup_time", "steps_per_s", "cumulative_time", "ratio_heatmap", "roofline",
          "setup_split")
"""The charts every grid gets (rnnbench.charts draws them)."""
RATIO_AXES = ("max_len", "batch_size", "num_units", "input_dim")
"""The numeric axes that get a chart of the static/dynamic ratios against them
(charts.ratio_chart) when the grid varies them (ratio_axes)."""
ABLATION_CHARTS = (tuple(f"ablation_{axis}" for axis in ABLATION_DEFAULTS) + ("api", "tf_version")
                   + tuple(f"ratio_{axis}" for axis in RATIO_AXES) + ("jax_unroll",))
"""The charts a grid gets for what it varies: one per ablation axis (charts.ablation_chart), one
comparing the apis when the grid has more than one (charts.api_chart), one comparing the
TensorFlow versions when it has more than one (charts.tf_version_chart), one per numeric
axis of RATIO_AXES it varies (charts.ratio_chart), and the unroll spectrum of its jax_scan
cells (charts.jax_unroll_chart)."""


def ratio_axes(cells: Iterable) -> list[str]:
    """The RATIO_AXES that take two values or more among ``cells`` (dicts or table rows)."""
    cells = list(cells)
    return [axis for axis in RATIO_AXES if len({int(cell[axis]) for cell in cells}) > 1]


def inputs_bytes(num_samples: int, max_len: int, input_dim: int) -> int:
    """Bytes of a dataset's inputs, float32 [num_samples, max_len, input_dim] (data.py): the
    one count check_config and the memory requests (resources.py) use."""
    return 4 * num_samples * max_len * input_dim


def axis_value_id(axis: str, value: Any) -> str:
    """How the tables name ``value`` of ``axis`` (measurements.csv's column): a
    sequence_length by sequence_length_id (``20``, ``full``, ``u5-20``; a claim may write
    ``max_len`` or ``full``, ``{uniform: [5, 20]}`` or ``u5-20``), any other value as text.
    A between claim's values are matched by it, before any job (check_claim_against_grid)
    and when judged (claims.judge)."""
    if axis == "sequence_length" and not (isinstance(value, str) and value != "max_len"):
        try:
            return sequence_length_id(value)
        except ValueError:
            pass
    return str(value)


def sequence_length_id(spec: Any) -> str:
    """Short, path-safe name of a sequence_length setting: ``20``, ``full``, ``u5-20``.

    Raises:
        ValueError: if ``spec`` is not an int, "max_len" or {"uniform": [low, high]}.
    """
    if isinstance(spec, bool):
        raise ValueError(f"sequence_length: {spec!r} is not a length")
    if isinstance(spec, int):
        return str(spec)
    if spec == "max_len":
        return "full"
    if isinstance(spec, dict) and set(spec) == {"uniform"} and len(spec["uniform"]) == 2:
        low, high = spec["uniform"]
        return f"u{low}-{high}"
    raise ValueError(f"sequence_length: {spec!r} is not an int, 'max_len' or {{uniform: [low, high]}}")


def sequence_length_bounds(spec: Any, max_len: int) -> tuple[int, int]:
    """Smallest and largest sequence_length (time steps) that ``spec`` can produce at ``max_len``.

    Raises:
        ValueError: if the bounds are not 1 <= low <= high <= max_len; the message names the
            sequence_length setting and the max_len.
    """
    sequence_length_id(spec)  # rejects unknown forms
    if isinstance(spec, int):
        low = high = spec
    elif spec == "max_len":
        low = high = max_len
    else:
        low, high = spec["uniform"]
    if not 1 <= low <= high:
        raise ValueError(f"sequence_length: uniform bounds {[low, high]} need 1 <= low <= high")
    if high > max_len:
        raise ValueError(
            f"sequence_length: {spec!r} reaches {high} time steps, above max_len {max_len}"
        )
    return low, high


def _floats(value: Any, key: str) -> Iterator[tuple[str, float]]:
    """(key, value) of every float inside a config value (lists and mappings searched)."""
    if isinstance(value, float):
        yield key, value
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item, key)
    elif isinstance(value, dict):
        for inner_key, item in value.items():
            yield from _floats(item, f"{key}.{inner_key}")


def check_config(config: dict) -> None:
    """Checks that the JSON-Schema cannot express; run before any job starts.

    Args:
        config: a config already validated (and given its defaults) by the JSON-Schema.

    Raises:
        ValueError: naming the key and the bad value, if a number outside ``claims`` is a
            float (JSON-Schema's "integer" admits 4.0; every such number counts something), a
            sequence_length
            exceeds some max_len in the grid, num_samples < a batch_size, the grid has
            duplicate sequence_length settings, fetches hooks comes without a warm-up step,
            an ablation axis with several values lacks its reference (ABLATION_DEFAULTS),
            max_warmup_steps < warmup_steps, min_measure_s is not finite (JSON-Schema's
            minimum admits NaN and infinity), the grid asks for more than MAX_TRAINING_JOBS
            jobs or a dataset above
            MAX_DATASET_BYTES, or it has no cell (naming left_out's reasons), or a claim asks
            for what the grid lacks (check_claim_against_grid).
    """
    for key, value in config.items():
        if key in ("claims", "min_measure_s"):  # the seeds' figures are ratios; seconds
            continue
        for where, number in _floats(value, key):
            raise ValueError(f"{where}: {number!r} is not an integer")
    from rnnbench.claims import check_claim

    claim_ids = [claim["id"].lower() for claim in config["claims"]]
    for number, claim in enumerate(config["claims"]):
        check_claim(claim, number)
        if claim_ids.count(claim["id"].lower()) > 1:
            raise ValueError(f"claims: the id {claim['id']!r} is given to more than one claim "
                             "(ids are compared without case): give each its own")
        if "figure" in claim and not math.isfinite(claim["figure"]):
            raise ValueError(f"claims.{number}.figure: {claim['figure']!r} is not a finite ratio "
                             f"(claim {claim['id']})")
    ids = [sequence_length_id(s) for s in config["sequence_length"]]
    if len(set(ids)) != len(ids):
        raise ValueError(f"sequence_length: duplicate settings in {config['sequence_length']!r}")
    for spec, max_len in itertools.product(config["sequence_length"], config["max_len"]):
        sequence_length_bounds(spec, max_len)
    for axis, default in ABLATION_DEFAULTS.items():
        if len(config[axis]) > 1 and default not in config[axis]:
            raise ValueError(
                f"{axis}: an ablation axis with several values must list its reference "
                f"{default!r} (each cell is compared with the cell at the reference), not "
                f"{config[axis]!r}")
    if config["max_warmup_steps"] < config["warmup_steps"]:
        raise ValueError(f"max_warmup_steps: {config['max_warmup_steps']} is below warmup_steps "
                         f"{config['warmup_steps']} (the warm-up runs at least warmup_steps and "
                         "at most max_warmup_steps)")
    if not math.isfinite(config["min_measure_s"]):
        raise ValueError(f"min_measure_s: {config['min_measure_s']!r} is not a finite number of "
                         "seconds")
    if "hooks" in config["fetches"] and config["warmup_steps"] < 1:
        raise ValueError("fetches: hooks needs warmup_steps >= 1 (its every-step fetch set "
                         f"first runs in the first warm-up step), not {config['warmup_steps']}")
    for batch_size in config["batch_size"]:
        if batch_size > config["num_samples"]:
            raise ValueError(
                f"batch_size: {batch_size} is above num_samples {config['num_samples']}"
            )
    # an upper bound (cells() leaves out a few redundant cells), computed without listing them
    ablation_cells = (1 + sum(len(config[a]) - 1 for a in ABLATION_DEFAULTS)
                      if config["ablation_design"] == "one_at_a_time"
                      else math.prod(len(config[a]) for a in ABLATION_DEFAULTS))
    jobs = (len(IMPLEMENTATIONS) * config["repeats"] * ablation_cells
            * math.prod(len(config[a]) for a in CELL_AXES if a not in ABLATION_DEFAULTS))
    if jobs > MAX_TRAINING_JOBS:
        raise ValueError(f"the grid asks for {jobs} training jobs (repeats {config['repeats']}), "
                         f"above {MAX_TRAINING_JOBS}: split it into several configs")
    dataset_bytes = inputs_bytes(config["num_samples"], max(config["max_len"]),
                                 max(config["input_dim"]))
    if dataset_bytes > MAX_DATASET_BYTES:
        raise ValueError(
            f"num_samples: {config['num_samples']} sequences of max_len {max(config['max_len'])} x "
            f"input_dim {max(config['input_dim'])} make a {dataset_bytes / 2**30:.1f} GiB dataset, "
            f"above {MAX_DATASET_BYTES / 2**30:.0f} GiB"
        )
    if not cells(config):
        raise ValueError("the grid has no cell: every combination of its axes is left out ("
                         + "; ".join(left_out_reasons(config)) + ")")
    for number, claim in enumerate(config["claims"]):
        check_claim_against_grid(claim, number, config)


def check_claim_against_grid(claim: dict, number: int, config: dict) -> None:
    """What a between, trend or law claim needs of the grid, checked before any job: a
    between claim's two values among its axis's values (of the same type: 4 and '4' are one
    value in the tables; a sequence_length by axis_value_id, so max_len and full are one), a
    trend or law claim's axis with two values or more (three for a
    law's lack-of-fit test: it needs a line through more than two points), and a law's
    ``at`` and ``value`` finite and above 0.

    Raises:
        ValueError: ``claims.<number>.<field>: ...`` naming the value and the grid's values.
    """
    kind, where = claim.get("kind", "ratio"), f"claims.{number}"
    if kind == "ratio":
        return
    axis, values = claim["axis"], config[claim["axis"]]
    if kind == "between":
        for value in claim["values"]:
            if axis == "sequence_length":  # ids: max_len and full are one
                found = any(axis_value_id(axis, value) == axis_value_id(axis, v) for v in values)
            else:
                found = any(type(value) is type(v) and value == v for v in values)
            if not found:
                raise ValueError(f"{where}.values: {value!r} is not a value of {axis} in this "
                                 f"grid ({values!r}): claim {claim['id']} compares two of them")
        if len({axis_value_id(axis, value) for value in claim["values"]}) < 2:
            raise ValueError(f"{where}.values: {claim['values']!r} name one value twice")
        return
    fewest = 3 if kind == "law" and "form" in claim else 2
    if len(set(map(str, values))) < fewest:
        raise ValueError(f"{where}.axis: {claim['axis']} takes {values!r} in this grid: a "
                         f"{kind} claim ({claim['id']}) needs {fewest} values or more of it")
    for field in ("at", "value"):
        if field in claim and not (math.isfinite(claim[field]) and claim[field] > 0):
            raise ValueError(f"{where}.{field}: {claim[field]!r} is not a finite number above 0 "
                             f"(claim {claim['id']})")


# Keys that earlier versions took, and what replaces them (validate_config names them).
RENAMED_KEYS = {
    "threads": "removed; a training job's threads follow intra_op_parallelism_threads and "
               "inter_op_parallelism_threads, now lists (e.g. intra_op_parallelism_threads: [2])",
    "fetch_loss": "removed; use fetches: [loss] (train_op and loss, the default) or "
                  "fetches: [train_op]",
    "intra_op_parallelism_threads": "now a list of thread counts, e.g. [2]",
    "inter_op_parallelism_threads": "now a list of thread counts, e.g. [1]",
    "parallel_iterations": "now a list, e.g. [batch_size] or [32]",
}


def check_config_file(path: str | Path) -> None:
    """Refuse what YAML reads silently otherwise in a config file: a key given twice in one
    mapping (YAML keeps the last), and a plain number that YAML 1.1 reads other than it looks:
    a leading zero (``07``, ``010`` = 8 as an octal) or a sexagesimal ``1:30`` (= 90). Quoted,
    such a value is a string (and the schema says what it must be).

    Raises:
        ValueError: naming the file, the line, the key (its path, e.g. ``claims.0.id``) and
            the value, and the fix; naming the file, line and column of a YAML syntax error;
            naming a file that cannot be read.
    """
    import yaml

    def walk(node: yaml.Node, where: list) -> None:
        line = f"{path}, line {node.start_mark.line + 1}"
        key = ".".join(map(str, where)) or "(top level)"
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, value in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise ValueError(f"{path}, line {key_node.start_mark.line + 1}: {key}: a key "
                                     "must be a plain name, not a list or mapping")
                if key_node.value in seen:
                    raise ValueError(f"{line.split(', line')[0]}, line "
                                     f"{key_node.start_mark.line + 1}: "
                                     f"{'.'.join(map(str, [*where, key_node.value]))}: the key "
                                     "appears twice in one mapping (YAML would keep the last): "
                                     "keep one")
                seen.add(key_node.value)
                walk(value, [*where, key_node.value])
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, [*where, i])
        elif (node.style is None and node.tag.endswith((":int", ":float"))
              and (re.fullmatch(r"[-+]?0[0-9_]+", node.value) or ":" in node.value)):
            read = yaml.safe_load(node.value)
            raise ValueError(f"{line}: {key}: {node.value!r} is read by YAML 1.1 as {read!r} "
                             "(a leading zero is octal, a colon sexagesimal): write the number "
                             "as meant, or quote it")
        elif (node.style is None and node.tag.endswith(":str")
              and re.fullmatch(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+", node.value)):
            mantissa, exponent = re.split("[eE]", node.value)
            mantissa += "" if "." in mantissa else ".0"
            exponent = exponent if exponent[0] in "+-" else f"+{exponent}"
            raise ValueError(f"{line}: {key}: {node.value} is read by YAML 1.1 as the text "
                             f"{node.value!r} (an exponent needs a dot before it and a sign): "
                             f"write {mantissa}e{exponent}")

    try:
        with open(path) as handle:
            root = yaml.compose(handle, Loader=yaml.SafeLoader)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror}): check the path given to "
                         "--configfile") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}): save it as UTF-8") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise ValueError(f"{path}, line {mark.line + 1}, column {mark.column + 1}: not valid "
                         f"YAML ({error.problem or error.context}): fix the syntax there") from None
    if root is not None:
        walk(root, [])


def validate_config(config: dict) -> None:
    """Validate ``config`` in place: JSON-Schema (filling in defaults), then check_config.

    Raises:
        snakemake.exceptions.WorkflowError: from the schema, naming the key and the value.
        ValueError: for a key of RENAMED_KEYS in its old form, unquoted on/off in
            meta_optimizer, an unquoted tf_version, or from check_config.
    """
    from snakemake.utils import validate

    for key, hint in RENAMED_KEYS.items():
        if key in config and not (key in ABLATION_DEFAULTS and isinstance(config[key], list)):
            raise ValueError(f"{key}: {config[key]!r}: {hint}")
    for key in ("meta_optimizer",):
        if isinstance(config.get(key), list) and any(isinstance(v, bool) for v in config[key]):
            raise ValueError(f"{key}: {config[key]!r}: quote \"on\" and \"off\" (YAML reads "
                             "them unquoted as true and false)")
    versions = config.get("tf_version")
    if versions is not None and not isinstance(versions, list):
        raise ValueError(f"tf_version: {versions!r}: a list of quoted versions, e.g. "
                         "[\"2.12\", \"2.21\"]")
    for version in versions or []:
        if isinstance(version, (int, float)):
            raise ValueError(f"tf_version: {versions!r}: quote each version, e.g. "
                             "[\"2.12\", \"2.21\"] (YAML reads 2.10 unquoted as the number 2.1)")
        if isinstance(version, str) and not re.fullmatch(r"[0-9]+\.[0-9]+", version):
            raise ValueError(f"tf_version: {version!r} is not a TensorFlow major.minor version "
                             "such as \"2.12\"")
    schema_error(config)
    validate(config, schema=str(CONFIG_SCHEMA), set_default=True)
    check_config(config)


def schema_error(config: dict) -> None:
    """Raise the schema's most relevant complaint about ``config`` in one line, naming the key
    (its path) and the value; Snakemake's own message adds the whole schema (hundreds of
    lines). Needs jsonschema and PyYAML, not Snakemake (jax_standalone.py checks its presets
    with it).

    Raises:
        ValueError: '<key path>: <what is wrong>', when the config fails the schema.
    """
    import jsonschema
    import yaml

    schema = yaml.safe_load(CONFIG_SCHEMA.read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return
    # of a value that no alternative (oneOf) takes, the complaint of the alternative of its
    # type: {unifrom: [1, 4]} is a mapping with an unknown key, not "not valid under any"
    wrong_type = {e.relative_schema_path[0] for e in error.context if e.validator == "type"}
    typed = [e for e in error.context if e.relative_schema_path[0] not in wrong_type]
    if error.validator in ("oneOf", "anyOf") and typed:
        error = jsonschema.exceptions.best_match(typed)
    where = ".".join(str(part) for part in error.absolute_path)
    hint = ""
    if error.validator == "additionalProperties":
        import difflib

        known = error.schema.get("properties", {})
        for key in sorted(map(str, set(error.instance) - set(known))):
            close = difflib.get_close_matches(key, known, n=1)
            hint += (f"; {key!r}: did you mean {close[0]!r}?" if close
                     else f"; {key!r}: expected one of {sorted(known)}")
    if error.validator == "type" and isinstance(error.instance, bool):
        hint += ("; YAML reads an unquoted yes, no, on, off, true or false as a boolean: quote "
                 "it, or write the value the schema asks for")
    elif error.validator == "type" and isinstance(error.instance, str) and re.fullmatch(
            r"[-+]?[0-9.]+(e[-+]?[0-9]+)?", error.instance):
        hint += ("; a number in quotes (--config passes a list's items as text): write it "
                 "unquoted, in a file given with --configfile")
    raise ValueError(f"{where + ': ' if where else ''}{error.message}{hint}")


def protocol_id(config: dict, image: str | None = None) -> str:
    """Folder name for the settings that change timings but are not grid axes (log_every,
    which changes no measurement, is left out), and the Apptainer image the rules run in
    (``image``: its name, e.g. ``rnnbench-cpu-<key>``; None for a bare run)."""
    return "_".join([config["device"], f"n{config['num_samples']}", protocol_label(config)]
                    + ([image] if image else []))


def protocol_label(protocol: dict) -> str:
    """The training protocol's settings that change timings, as a result records them
    (bench.run's ``protocol``: PROTOCOL_KEYS less device): steps and min_measure_s (seconds),
    warm-up steps, hook_every, seed, Grappler timed alone. Part of protocol_id's folder name,
    and the column ``protocol`` of measurements.csv, by which compare keeps runs of other
    protocols apart."""
    return "_".join(
        [
            f"steps{protocol['steps']}-{float(protocol['min_measure_s'])!r}s",
            f"warmup{protocol['warmup_steps']}-{protocol['max_warmup_steps']}",
            f"hooks{protocol['hook_every']}",
            f"seed{protocol['seed']}",
        ]
        + (["grappleralone"] if protocol["grappler_alone"] else [])
    )


def dataset_id(max_len: int, sequence_length: Any, input_dim: int, num_units: int,
               num_samples: int, seed: int) -> str:
    """Name of the dataset one cell reads (labels range over num_units classes)."""
    return (
        f"ml{max_len}_sl{sequence_length_id(sequence_length)}_in{input_dim}"
        f"_cls{num_units}_n{num_samples}_seed{seed}"
    )


def _ablations(cell: Any) -> list[tuple[str, str, str]]:
    """(axis, cell id suffix, words) of each ablation axis where ``cell`` (a dict or a table
    row; missing axes count as their defaults) differs from ABLATION_DEFAULTS, in CELL_AXES
    order."""
    get = {**ABLATION_DEFAULTS, **{axis: cell[axis] for axis in ABLATION_DEFAULTS
                                   if axis in cell}}
    out = []
    if get["loop_bound"] != "batch_max":
        out.append(("loop_bound", "_lbmaxlen", "dynamic loops to max_len"))
    if not bool(get["pass_sequence_length"]):
        out.append(("pass_sequence_length", "_nosl", "no sequence_length"))
    if get["meta_optimizer"] != "on":
        out.append(("meta_optimizer", "_nomo", "no Grappler"))
    if get["fetches"] != "loss":
        out.append(("fetches", f"_f{get['fetches'].replace('_', '')}", FETCHES[get["fetches"]]))
    if str(get["parallel_iterations"]) != "batch_size":
        out.append(("parallel_iterations", f"_pi{get['parallel_iterations']}",
                    f"parallel_iterations {get['parallel_iterations']}"))
    if bool(get["swap_memory"]):
        out.append(("swap_memory", "_swap", "swap_memory"))
    for axis, short in (("intra_op_parallelism_threads", "intra"),
                        ("inter_op_parallelism_threads", "inter")):
        if int(get[axis]) != 1:
            out.append((axis, f"_{short}{get[axis]}", f"{get[axis]} {short}-op threads"))
    if get["mode"] != "train":
        out.append(("mode", "_infer", MODES[get["mode"]]))
    if str(get["unroll"]) != "max_len":
        out.append(("unroll", f"_u{get['unroll']}", f"static at scan unroll={get['unroll']}"))
    return out


def cell_id(cell: dict) -> str:
    """Name of a cell, e.g. ``basic_lstm_bs32_ml100_sl10_nu64_in16``; the other apis add
    their API_SUFFIXES (``_keras`` / ``_kerasxla`` / ``_kerasjax`` / ``_jaxscan``); a
    TensorFlow version other than DEFAULT_TF_VERSION (the venv's) adds ``_tf<version>``,
    e.g. ``_tf2.12``; then each ablation away from ABLATION_DEFAULTS adds a suffix,
    in CELL_AXES order: ``_lbmaxlen`` (loop_bound max_len),
    ``_nosl`` (no sequence_length), ``_nomo`` (meta_optimizer off), ``_ftrainop`` /
    ``_fhooks`` / ``_fhookscold`` (fetches), ``_pi<N>`` (parallel_iterations), ``_swap``
    (swap_memory), ``_intra<N>`` / ``_inter<N>`` (TensorFlow's threads), ``_infer`` (mode
    inference), ``_u<N>`` (static's scan unroll, jax_scan)."""
    name = (
        f"{cell['cell']}_bs{cell['batch_size']}_ml{cell['max_len']}"
        f"_sl{sequence_length_id(cell['sequence_length'])}"
        f"_nu{cell['num_units']}_in{cell['input_dim']}"
    )
    return name + API_SUFFIXES[cell.get("api", "compat_v1")] + tf_version_suffix(
        cell.get("tf_version", DEFAULT_TF_VERSION)) + "".join(
        suffix for _, suffix, _ in _ablations(cell))


def tf_version_suffix(tf_version: str) -> str:
    """The cell id suffix of a TensorFlow version: none for DEFAULT_TF_VERSION, else
    ``_tf<version>``."""
    return "" if tf_version == DEFAULT_TF_VERSION else f"_tf{tf_version}"


def varied_axes(cells: Iterable) -> set[str]:
    """The ablation axes that take more than one value among ``cells`` (dicts or table rows).

    An axis at one value throughout (e.g. every cell at 2 intra-op threads) is no ablation
    of that grid: its value is everyone's reference."""
    values: dict[str, set] = {axis: set() for axis in ABLATION_DEFAULTS}
    for cell in cells:
        for axis in ABLATION_DEFAULTS:
            values[axis].add(str(cell[axis]) if axis in cell else str(ABLATION_DEFAULTS[axis]))
    return {axis for axis, seen in values.items() if len(seen) > 1}


def ablated_axes(cell: Any, varied: Iterable[str] | None = None) -> list[str]:
    """The ablation axes where ``cell`` differs from ABLATION_DEFAULTS, among ``varied``
    (varied_axes of its grid; None: every ablation axis)."""
    return [axis for axis, _, _ in _ablations(cell) if varied is None or axis in varied]


def ablation_label(cell: Any, varied: Iterable[str] | None = None) -> str:
    """The ablations of a cell (a dict or a table row) away from ABLATION_DEFAULTS among
    ``varied`` (None: every axis), in words ('dynamic loops to max_len, no Grappler'); ''
    for none."""
    return ", ".join(words for axis, _, words in _ablations(cell)
                     if varied is None or axis in varied)


@dataclass(frozen=True)
class Cell:
    """A measured cell as a value: its id and the ids of the cells it is compared with, each
    computed once from the cell's axes (cell_id of the axes changed), never by editing an id
    string; results.load_results writes them as columns.

    Attributes:
        id: cell_id of the cell's axes.
        reference_id: the same cell with every ablation axis of ``varied`` (varied_axes of its
            grid; None: every ablation axis) at ABLATION_DEFAULTS: the cell its ablations are
            measured against (its own id when it ablates none).
        compat_v1_id: the same cell in api compat_v1 (a keras cell's unroll=False is compared
            with its dynamic_rnn).
        default_tf_id: the same cell in DEFAULT_TF_VERSION (a row of the versions table).
    """

    id: str
    reference_id: str
    compat_v1_id: str
    default_tf_id: str

    @classmethod
    def of(cls, axes: Any, varied: Iterable[str] | None = None) -> "Cell":
        """The Cell of ``axes`` (a cell dict as grid.cells gives it and a result records it;
        missing ablation axes count as their defaults)."""
        axes = dict(axes)
        at_reference = {axis: ABLATION_DEFAULTS[axis] for axis in ablated_axes(axes, varied)}
        return cls(id=cell_id(axes), reference_id=cell_id({**axes, **at_reference}),
                   compat_v1_id=cell_id({**axes, "api": "compat_v1"}),
                   default_tf_id=cell_id({**axes, "tf_version": DEFAULT_TF_VERSION}))


def charted_ablation_axes(cells: list) -> list[str]:
    """The ablation axes that get a chart (charts.ablation_chart): the varied ones that take
    at least two values among the ``cells`` (dicts or table rows) that differ from their
    reference in that axis alone (compat_v1 cells only, for COMPAT_V1_ONLY axes)."""
    varied = varied_axes(cells)
    return [axis for axis in ABLATION_DEFAULTS
            if len({str(cell[axis]) for cell in cells if on_axis(cell, axis, varied)}) > 1]


def on_axis(cell: Any, axis: str, varied: Iterable[str]) -> bool:
    """Whether ``cell`` belongs on ``axis``'s ablation chart: it differs from its reference in
    that axis alone, or not at all (among ``varied``), and has the axis (a keras cell has no
    COMPAT_V1_ONLY axis)."""
    return (set(ablated_axes(cell, varied)) <= {axis}
            and (axis not in COMPAT_V1_ONLY or cell.get("api", "compat_v1") == "compat_v1"))


def charts_apis(cells: list) -> bool:
    """Whether the grid gets an api chart (charts.api_chart): its cells without ablations
    (among the grid's varied axes, as the summary's ``ablations``) are in two apis or more."""
    varied = varied_axes(cells)
    return len({cell.get("api", "compat_v1") for cell in cells
                if not ablated_axes(cell, varied)}) > 1


def job_threads(cell: dict) -> int:
    """Snakemake threads of a cell's training job: the most TensorFlow threads it asks for."""
    return max(cell.get("intra_op_parallelism_threads", 1),
               cell.get("inter_op_parallelism_threads", 1))


LOOP_BOUND_ONCE = ("loop_bound max_len where every sequence is max_len long is the loop_bound "
                   "batch_max cell")
ONE_AT_A_TIME = ("ablation_design one_at_a_time measures one ablation axis away from its "
                 "reference at a time")
"""Two of left_out's reasons that the design implies and the docs describe: config_warnings
leaves them unsaid."""


def left_out(cell: dict, config: dict) -> str | None:
    """Why the grid leaves out ``cell`` (a combination of the CELL_AXES of ``config``), in
    words naming the config's keys, or None where it is measured. cells() and the config's
    messages (config_warnings, check_config) both read this one rule.

    Left out: loop_bound max_len with pass_sequence_length false (without sequence_length
    every step runs anyway: the runs of loop_bound batch_max); loop_bound max_len where every
    sequence is max_len long and the grid has batch_max (the same loop bound); with
    ``ablation_design`` one_at_a_time, a cell more than one varied ablation axis away from
    ABLATION_DEFAULTS (each ablation is measured against its reference alone); a cell of the
    keras apis or jax_scan with an ablation in COMPAT_V1_ONLY (they have no such setting);
    the JAX_APIS away from TENSORFLOW_ONLY's references or at a tf_version other than the
    venv's;
    other apis away from JAX_ONLY's references; a numeric unroll >= max_len where the grid has
    unroll max_len (the scan unrolls fully either way); mode inference with fetches other than
    loss (MODES)."""
    if cell["loop_bound"] == "max_len" and not cell["pass_sequence_length"]:
        return ("loop_bound max_len needs pass_sequence_length true (without it the loop "
                "runs to max_len anyway: loop_bound batch_max's runs)")
    if (cell["loop_bound"] == "max_len" and "batch_max" in config["loop_bound"]
            and sequence_length_bounds(cell["sequence_length"], cell["max_len"])[0]
            == cell["max_len"]):
        return LOOP_BOUND_ONCE
    varied = {axis for axis in ABLATION_DEFAULTS if len(config[axis]) > 1}
    if (config.get("ablation_design") == "one_at_a_time"
            and len(ablated_axes(cell, varied)) > 1):
        return ONE_AT_A_TIME
    ablated = set(ablated_axes(cell))  # a single value away from the reference counts too
    if cell["api"] != "compat_v1" and ablated & set(COMPAT_V1_ONLY):
        return (f"api {cell['api']} has no " + ", ".join(sorted(ablated & set(COMPAT_V1_ONLY)))
                + " setting (compat_v1 only)")
    if cell["api"] in JAX_APIS and ablated & set(TENSORFLOW_ONLY):
        return (f"api {cell['api']} has no "
                + ", ".join(sorted(ablated & set(TENSORFLOW_ONLY))) + " setting (no Grappler)")
    if cell["api"] in JAX_APIS and cell["tf_version"] != DEFAULT_TF_VERSION:
        return (f"api {cell['api']} imports no TensorFlow: it runs at tf_version "
                f"{DEFAULT_TF_VERSION} only")
    if cell["api"] != "jax_scan" and ablated & set(JAX_ONLY):
        return f"api {cell['api']} has no unroll factor (jax_scan only)"
    if (cell["unroll"] != "max_len" and cell["unroll"] >= cell["max_len"]
            and "max_len" in config["unroll"]):
        return "an unroll at or above max_len is unroll max_len (the scan unrolls fully)"
    if cell["mode"] == "inference" and cell["fetches"] != "loss":
        return "mode inference fetches the loss alone (fetches loss)"
    return None


def cells(config: dict) -> dict[str, dict]:
    """All cells of the grid that it measures (those left_out does not name), keyed by
    cell_id, in grid order. Each value holds the cell's axes plus ``dataset`` (its
    dataset_id)."""
    out = {}
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        cell = dict(zip(CELL_AXES, values))
        if left_out(cell, config):
            continue
        cell["dataset"] = dataset_id(
            cell["max_len"], cell["sequence_length"], cell["input_dim"], cell["num_units"],
            config["num_samples"], config["seed"],
        )
        out[cell_id(cell)] = cell
    return out


def left_out_reasons(config: dict) -> dict[str, int]:
    """{left_out's reason: how many combinations of the grid's axes it leaves out}, most
    first: what config_warnings and check_config tell a user whose cells went missing."""
    found: dict[str, int] = {}
    for values in itertools.product(*(config[axis] for axis in CELL_AXES)):
        reason = left_out(dict(zip(CELL_AXES, values)), config)
        if reason:
            found[reason] = found.get(reason, 0) + 1
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def shared_runs(cells: dict[str, dict]) -> dict[tuple[str, str], str]:
    """The runs a cell takes from another cell instead of measuring them: (cell_id, impl) ->
    the id of the cell whose runs of impl serve it. A cell away from its reference in some
    STATIC_INVARIANT_AXES (among the grid's varied axes) takes the static runs of the same cell
    with those axes at their references (when the grid has it), so an ablation that changes
    dynamic_rnn alone does not re-measure static_rnn unchanged; likewise a cell away in
    DYNAMIC_INVARIANT_AXES (the scan's unroll) takes its reference's dynamic runs.

    ``cells``: the grid (cells()). Planning (which jobs run) and aggregation (which rows a cell
    gets) both read this one mapping."""
    varied = varied_axes(cells.values())
    out = {}
    for name, cell in cells.items():
        for impl, invariant in (("static", STATIC_INVARIANT_AXES),
                                ("dynamic", DYNAMIC_INVARIANT_AXES)):
            axes = [axis for axis in ablated_axes(cell, varied) if axis in invariant]
            if axes:
                reference = cell_id({**cell, **{axis: ABLATION_DEFAULTS[axis] for axis in axes}})
                if reference in cells:
                    out[(name, impl)] = reference
    return out


def job_priorities(cells: dict[str, dict], repeats: int,
                   shared: dict[tuple[str, str], str]) -> dict[tuple[str, str, int], int]:
    """Snakemake priorities of the training jobs (higher runs first), (cell_id, impl, repeat)
    -> priority, for the jobs that run (not the ``shared`` runs: shared_runs of ``cells``).

    Jobs run repeat by repeat through the grid (repeat 1 of every cell, then repeat 2, ...),
    so a slow spell of the machine spreads over cells instead of spoiling one; within a
    repeat, the static and dynamic runs of a cell, and the dynamic runs of the cells that
    share its static run (or its dynamic run: jax_scan's unroll), are next to each other in time (the pair that intervals.ratio_ci
    analyses paired). Static runs first in odd repeats and dynamic first in even ones, so
    neither side always follows the other. All priorities are >= 1 (other rules: 0)."""
    def group_of(name: str) -> str:  # the cell whose runs this one shares, or itself
        return shared.get((name, "static"), shared.get((name, "dynamic"), name))

    groups = {g: i for i, g in enumerate(dict.fromkeys(group_of(name) for name in cells))}
    out = {}
    for repeat in range(1, repeats + 1):
        for name in cells:
            group = group_of(name)
            top = 3 * (len(groups) * (repeats - repeat + 1) - groups[group])
            odd = repeat % 2 == 1
            for impl, first in (("static", odd), ("dynamic", not odd)):
                if (name, impl) not in shared:
                    out[(name, impl, repeat)] = ((top if first else top - 1) if group == name
                                                 else top - 2)
    return out


def config_warnings(config: dict, grid_cells: dict[str, dict] | None = None) -> list[str]:
    """What a valid config does that its user may not expect, one sentence each: fewer repeats
    than the intervals need; combinations of its axes left out (left_out_reasons, but for
    ablation_design's); ratio claims without a compat_v1 cell to judge them on; hook fetches
    that never run in the measured steps (of a cell that fetches hooks). ``grid_cells``: the
    config's cells() where the caller has them (the workflow), else computed here."""
    from rnnbench.intervals import MIN_REPEATS

    out = []
    if config["repeats"] < MIN_REPEATS:
        out.append(f"repeats: {config['repeats']} is below {MIN_REPEATS}, the fewest at which "
                   "the 95 % intervals cover 95 % (rnnbench/intervals.py); verdicts from this "
                   f"grid are not to be trusted: use repeats >= {MIN_REPEATS}")
    for reason, count in left_out_reasons(config).items():
        # by design, and documented: one ablation at a time; a loop bound measured once
        if reason not in (LOOP_BOUND_ONCE, ONE_AT_A_TIME):
            out.append(f"{count} combination{'s' if count > 1 else ''} of the grid's axes "
                       f"left out: {reason}")
    if RATIO_CLAIM_API not in config["api"]:
        ratio = [c["id"] for c in config["claims"] if c.get("kind", "ratio") == "ratio"]
        if ratio:
            out.append("claims " + ", ".join(ratio) + " compare static_rnn with dynamic_rnn in "
                       "api compat_v1 cells, and this grid has none: FINDINGS lists them as not "
                       "judged")
    # the first measured step (k = 1 + warmup_steps) at which hook_step("hooks", ...) fires
    # (k % hook_every == 0), computed rather than listed: steps may be large; only where a
    # cell fetches hooks (left_out may leave every such cell out)
    every, first = config["hook_every"], 1 + config["warmup_steps"]
    hooked = "hooks" in config["fetches"] and any(
        cell["fetches"] == "hooks"
        for cell in (cells(config) if grid_cells is None else grid_cells).values())
    if hooked and -(-first // every) * every > first - 1 + config["steps"]:
        out.append(f"fetches hooks: with hook_every {config['hook_every']} no measured step "
                   f"(steps {1 + config['warmup_steps']} to {config['warmup_steps'] + config['steps']}"
                   ") fetches the hook set; lower hook_every to see it in the steady state")
    return out


def datasets(config: dict) -> dict[str, dict]:
    """Every distinct dataset the grid needs, keyed by dataset_id, with its parameters."""
    out = {}
    for cell in cells(config).values():
        out[cell["dataset"]] = {
            "max_len": cell["max_len"],
            "sequence_length": cell["sequence_length"],
            "input_dim": cell["input_dim"],
            "num_classes": cell["num_units"],
            "num_samples": config["num_samples"],
            "seed": config["seed"],
        }
    return out
