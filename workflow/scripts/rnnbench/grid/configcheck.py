"""Run every check of a config that comes before any job, in one module.

The workflow (common.smk, config.smk), ``rnnbench check`` and the tests thus run the same
ones: the files' YAML, the JSON-Schema (workflow/schemas/config.schema.yaml, which fills in
defaults), the cross-field checks the schema cannot express, the claims against the grid,
and the warnings a valid config still earns.

yaml, jsonschema and Snakemake are imported where used: `rnnbench jax`
(rnnbench.commands.jax) reads check_cross_fields on a machine that may lack them.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from rnnbench.grid.axes import (ABLATION_DEFAULTS, CELL_AXES, IMPLEMENTATIONS, MAX_DATASET_BYTES,
                                MIN_REPEATS,
                           MAX_TRAINING_JOBS, axis_value_id, inputs_bytes,
                           sequence_length_bounds, sequence_length_id)
from rnnbench.grid.cells import LOOP_BOUND_ONCE, ONE_AT_A_TIME, cells, left_out_reasons, same_cells
from rnnbench.grid.claimspec import check_claim
from rnnbench.grid.configfiles import (check_config_file, claim_origin,
                                       layered_files, load_claims, own_claims, source_note)
from rnnbench.grid.layout import CONFIG_SCHEMA, REPO

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


@functools.lru_cache(maxsize=1)
def config_schema() -> dict:
    """Return config.schema.yaml, parsed once per process; callers must not change it.

    It uses libyaml where PyYAML has it (the pure-Python parser takes about 0.1 s for it).
    Needs PyYAML.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(CONFIG_SCHEMA.read_text(), Loader=loader)


def schema_defaults() -> dict:
    """Return the schema's default of every top-level key of config.schema.yaml that has one.

    The one home of the config's defaults for a tool that runs without Snakemake (the
    stand-alone JAX script). Needs PyYAML.

    Returns:
        {key: default}.
    """
    schema = config_schema()
    return {key: spec["default"] for key, spec in schema["properties"].items()
            if "default" in spec}


def margin_of(config: dict) -> float:
    """Return the practical margin of a config read without the schema (configfiles.read_config).

    Its ``margin``, else the schema's default. Needs PyYAML.
    """
    return float(config.get("margin", schema_defaults()["margin"]))


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


def _check_claims(config: dict) -> None:
    """Each claim's fields (claims.check_claim), ids unique without case, figures finite."""
    claim_ids = [claim["id"].lower() for claim in config["claims"]]
    for number, claim in enumerate(config["claims"]):
        check_claim(claim, number)
        if claim_ids.count(claim["id"].lower()) > 1:
            raise ValueError(f"claims: the id {claim['id']!r} is given to more than one claim "
                             "(ids are compared without case): give each its own")
        if "figure" in claim and not math.isfinite(claim["figure"]):
            raise ValueError(f"claims.{number}.figure: {claim['figure']!r} is not a finite ratio "
                             f"(claim {claim['id']})")


def _check_axes(config: dict) -> None:
    """sequence_length settings distinct and within every max_len; ablation references
    listed; the warm-up's bounds, min_measure_s finite, hooks warmed up, batch sizes within
    num_samples."""
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
    if not math.isfinite(config["margin"]):
        raise ValueError(f"margin: {config['margin']!r} is not a finite fraction (0.1 for 10 %)")
    if "hooks" in config["fetches"] and config["warmup_steps"] < 1:
        raise ValueError("fetches: hooks needs warmup_steps >= 1 (its every-step fetch set "
                         f"first runs in the first warm-up step), not {config['warmup_steps']}")
    for batch_size in config["batch_size"]:
        if batch_size > config["num_samples"]:
            raise ValueError(
                f"batch_size: {batch_size} is above num_samples {config['num_samples']}"
            )


def _check_size(config: dict) -> None:
    """At most MAX_TRAINING_JOBS training jobs and a dataset of at most MAX_DATASET_BYTES."""
    # an upper bound (cells() leaves out a few redundant cells), computed without listing them
    ablation_cells = (1 + sum(len(config[a]) - 1 for a in ABLATION_DEFAULTS)
                      if config["ablation_design"] == "one_at_a_time"
                      else math.prod(len(config[a]) for a in ABLATION_DEFAULTS))
    repeats = config["repeats"] + config.get("more_repeats", 0)
    jobs = (len(IMPLEMENTATIONS) * repeats * ablation_cells
            * math.prod(len(config[a]) for a in CELL_AXES if a not in ABLATION_DEFAULTS))
    if jobs > MAX_TRAINING_JOBS:
        more = config.get("more_repeats", 0)
        raise ValueError(f"the grid asks for {'up to ' * bool(more)}{jobs} training jobs "
                         f"(repeats {config['repeats']}"
                         + (f", more_repeats {more}" if more else "") + "), "
                         f"above {MAX_TRAINING_JOBS}: split it into several configs")
    dataset_bytes = inputs_bytes(config["num_samples"], max(config["max_len"]),
                                 max(config["input_dim"]))
    if dataset_bytes > MAX_DATASET_BYTES:
        raise ValueError(
            f"num_samples: {config['num_samples']} sequences of max_len {max(config['max_len'])} x "
            f"input_dim {max(config['input_dim'])} make a {dataset_bytes / 2**30:.1f} GiB dataset, "
            f"above {MAX_DATASET_BYTES / 2**30:.0f} GiB"
        )


def _check_distinct(grid: dict[str, dict]) -> None:
    """Refuse two cells that are one (cells.same_cells), naming the axis values that make
    them look different."""
    pair = same_cells(grid)
    if pair:
        first, second = (grid[name] for name in pair)
        differ = "; ".join(f"{axis}: {first[axis]!r} and {second[axis]!r}"
                           for axis in CELL_AXES if first[axis] != second[axis])
        raise ValueError(f"{differ} make one cell at max_len {first['max_len']} and batch_size "
                         f"{first['batch_size']} ({pair[0]} and {pair[1]} would measure it "
                         "twice): list one of them")


def check_cross_fields(config: dict) -> None:
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
            max_warmup_steps < warmup_steps, min_measure_s or margin is not finite (JSON-Schema's
            minimum admits NaN and infinity), the grid asks for more than MAX_TRAINING_JOBS
            jobs or a dataset above
            MAX_DATASET_BYTES, or it has no cell (naming left_out's reasons), or a claim asks
            for what the grid lacks (check_claim_against_grid), two cells are one
            (cells.same_cells: e.g. sequence_length 8 beside max_len at max_len 8), or
            extrapolate names an axis the grid gives one value.
    """
    for key, value in config.items():
        if key in ("claims", "min_measure_s", "margin"):  # ratios; seconds; a fraction
            continue
        for where, number in _floats(value, key):
            raise ValueError(f"{where}: {number!r} is not an integer")
    _check_claims(config)
    _check_axes(config)
    _check_size(config)
    grid = cells(config)
    if not grid:
        raise ValueError("the grid has no cell: every combination of its axes is left out ("
                         + "; ".join(left_out_reasons(config)) + ")")
    _check_distinct(grid)
    for axis, at in (config.get("extrapolate") or {}).items():
        if len(set(config[axis])) < 2:
            raise ValueError(f"extrapolate: {axis}: {at}: the grid lists one {axis} "
                             f"({config[axis]}), and a scaling law needs two values or more "
                             f"(docs/method.md, Laws): list more {axis} values or drop it")
    for number, claim in enumerate(config["claims"]):
        check_claim_against_grid(claim, number, config)


def check_claim_against_grid(claim: dict, number: int, config: dict) -> None:
    """Check what a between, trend or law claim needs of the grid, before any job.

    A between claim's two values must be among its axis's values, and differ. They must be of
    the same type (4 and '4' are one value in the tables); a sequence_length is compared by
    axis_value_id, so max_len and full are one. A trend or law claim's axis needs two values or
    more; three for a law with ``form`` (its lack-of-fit test needs a line through more than two
    points). A law's ``at`` and ``value`` must be finite and above 0. A ratio claim passes.

    Args:
        claim: the claim, as the config gives it.
        number: its position in the config's claims, for the message.
        config: the validated config.

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


def _check_old_forms(config: dict) -> None:
    """validate_config's checks before the schema: RENAMED_KEYS in their old form, unquoted
    on/off in meta_optimizer, unquoted or malformed tf_version."""
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


def validate_config(config: dict) -> None:
    """Validate ``config`` in place: JSON-Schema (filling in defaults), then check_cross_fields.

    Args:
        config: the config as loaded.

    Raises:
        snakemake.exceptions.WorkflowError: from the schema, naming the key and the value.
        ValueError: for a key of RENAMED_KEYS in its old form, unquoted on/off in
            meta_optimizer, an unquoted tf_version, or from schema_error or check_cross_fields.
    """
    from snakemake.utils import validate

    _check_old_forms(config)
    schema_error(config)
    validate(config, schema=str(CONFIG_SCHEMA), set_default=True)
    check_cross_fields(config)


def schema_error(config: dict, json_preset: bool = False) -> None:
    """Raise the schema's most relevant complaint about ``config`` in one line.

    It names the key (its path) and the value; Snakemake's own message adds the whole schema
    (hundreds of lines). Needs jsonschema and PyYAML, not Snakemake: `rnnbench jax`
    (rnnbench.commands.jax) checks its presets with it.

    Args:
        config: the config as loaded.
        json_preset: True for a JSON preset (`rnnbench jax`), whose hints name JSON's
            quoting, not YAML's or --config's.

    Raises:
        ValueError: '<key path>: <what is wrong>', when the config fails the schema.
    """
    import jsonschema

    schema = config_schema()
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
                     else f"; {key!r}: expected one of {', '.join(sorted(known))}")
    if error.validator == "type" and isinstance(error.instance, bool):
        hint += ("; JSON's true and false are booleans: write the value the schema asks for"
                 if json_preset else "; YAML reads an unquoted yes, no, on, off, true or false "
                 "as a boolean: quote it, or write the value the schema asks for")
    elif (error.validator == "type" and error.validator_value == "array"
          and not isinstance(error.instance, (list, dict))):
        listed = json.dumps([error.instance])
        hint += (f"; a list: write {listed}" if json_preset else
                 f"; a list: write [{error.instance}] (on the command line: --config "
                 f"'{where}=[{error.instance}]')" if isinstance(error.instance, str) else
                 f"; a list: write [{error.instance}], in a file given with --configfile "
                 "(--config passes a list's items as text)")
    elif isinstance(error.instance, str) and re.fullmatch(  # a type's or a word list's
            r"[-+]?[0-9.]+(e[-+]?[0-9]+)?", error.instance):
        hint += ("; a number in quotes: write it without them" if json_preset else
                 "; a number in quotes (--config passes a list's items as text): write it "
                 "unquoted, in a file given with --configfile")
    raise ValueError(f"{where + ': ' if where else ''}{error.message}{hint}")


def config_warnings(config: dict, grid_cells: dict[str, dict] | None = None) -> list[str]:
    """Say what a valid config does that its user may not expect, one sentence each.

    Args:
        config: the validated config.
        grid_cells: the config's cells() where the caller has them (the workflow); None to
            compute them here.

    Returns:
        The warnings: fewer repeats than the intervals need (MIN_REPEATS); combinations of its
        axes left out (left_out_reasons, but for ablation_design's and the loop bound's); a
        jax_scan unroll of 1 (static runs dynamic's loop); hook fetches that never run in the
        measured steps (of a cell that fetches hooks).
    """

    out = []
    if config["repeats"] < MIN_REPEATS:
        out.append(f"repeats: {config['repeats']} is below {MIN_REPEATS}, the fewest at which "
                   "the 95 % intervals cover 95 % (docs/method.md, Intervals); verdicts from this "
                   f"grid are not to be trusted: use repeats >= {MIN_REPEATS}")
    for reason, count in left_out_reasons(config).items():
        # by design, and documented: one ablation at a time; a loop bound measured once
        if reason not in (LOOP_BOUND_ONCE, ONE_AT_A_TIME):
            out.append(f"{count} combination{'s' if count > 1 else ''} of the grid's axes "
                       f"left out: {reason}")
    if 1 in config["unroll"] and "jax_scan" in config["api"]:  # a null comparison, on purpose?
        out.append("unroll: 1 is dynamic's own loop (lax.scan's unroll=1): those jax_scan cells "
                   "compare one program with itself, their ratios 1 but for noise"
                   + ("" if len(config["unroll"]) > 1 else "; list max_len or a factor above 1 "
                      "to measure unrolling"))
    # the first measured step (k = 1 + warmup_steps) at which axes.hook_step("hooks", ...)
    # fires (k % hook_every == 0), computed rather than listed: steps may be large; only where
    # a cell fetches hooks (left_out may leave every such cell out)
    every, first = config["hook_every"], 1 + config["warmup_steps"]
    hooked = "hooks" in config["fetches"] and any(
        cell["fetches"] == "hooks"
        for cell in (cells(config) if grid_cells is None else grid_cells).values())
    if hooked and -(-first // every) * every > first - 1 + config["steps"]:
        last = config["warmup_steps"] + config["steps"]
        out.append(f"fetches hooks: with hook_every {config['hook_every']} no measured step "
                   f"(steps {1 + config['warmup_steps']} to {last}) fetches the hook set; "
                   "lower hook_every to see it in the steady state")
    return out


def check_config_files(files: list[str | Path], config: dict, available_mb: int | None,
                       repo: str | Path | None = None, notes: list[str] | None = None,
                       shipped: str | Path = "config.yaml", overrides: dict | None = None) -> dict:
    """Check the config files and the merged ``config``, and that the largest job fits in memory.

    Args:
        files: the config files as given (check_config_file: YAML syntax, duplicate keys,
            YAML 1.1 readings).
        config: the config Snakemake loaded from them (and --config); filled in with the
            schema's defaults, in place.
        available_mb: the memory a local job may use, MiB; None for no check (e.g. on a
            cluster, whose nodes are sized by each job's mem_mb request).
        repo: where ``claims_from`` files are looked for after the working directory (default:
            the repository of this module).
        notes: gets what the checks changed that the user should know (own_claims), and where
            the grid is read from when the working directory has no config.yaml (source_note).
        shipped: the config.yaml the Snakefile read as the grid's base (own_claims).
        overrides: the keys given with Snakemake's --config (own_claims keeps them).

    Returns:
        cells.cells(config): {cell_id: cell}.

    Raises:
        ValueError: one line naming the key (or file and line), the value and the fix.
    """
    from rnnbench.grid.resources import check_fits

    for path in files:
        check_config_file(path)
    for note in (source_note(shipped, files), own_claims(files, config, shipped, overrides)):
        if note and notes is not None:
            notes.append(note)
    origins = load_claims(config, repo or REPO)
    try:
        validate_config(config)
    except ValueError as error:  # the schema's complaints too (schema_error)
        raise ValueError(claim_origin(str(error), origins)) from None
    grid_cells = cells(config)
    if available_mb is not None:
        check_fits(grid_cells, config["num_samples"], available_mb, device=config["device"])
    return grid_cells


def check_files(paths: list[str | Path]) -> tuple[dict, dict[str, dict], str]:
    """Check config files as the workflow does before any job, without Snakemake's command line.

    The files are configfiles.layered_files' (over config.yaml, as the Snakefile reads it, or
    a first file's folder's grid). Later files override earlier ones' keys, as --configfile does
    over config.yaml. The largest job must fit this machine's memory
    (resources.machine_mem_mb).

    Args:
        paths: the config files given (none: the base config alone).

    Returns:
        (config, cells, line): the merged config, filled in with the schema's defaults; its
        cells, {cell_id: cell}; and the line that says what the grid holds, ``config: <files>:
        <N> cells, <M> training jobs``, with the cap of a second look's jobs (more_repeats).

    Raises:
        ValueError: one line naming the file or key, the value and the fix (check_config_files).
    """
    import yaml

    from rnnbench.grid.cells import shared_runs
    from rnnbench.grid.plan import job_priorities
    from rnnbench.grid.resources import machine_mem_mb

    base, files = layered_files(paths, REPO)
    for path in files:
        check_config_file(path)  # before yaml.safe_load: its errors name file and line
    config = {}
    for path in files:
        config.update(yaml.safe_load(Path(path).read_text()) or {})
    grid_cells = check_config_files(files, config, machine_mem_mb(), shipped=base)
    shared = shared_runs(grid_cells)
    jobs = len(job_priorities(grid_cells, config["repeats"], shared))
    more = len(job_priorities(grid_cells, config["repeats"] + config["more_repeats"],
                              shared)) - jobs
    line = (f"config: {' + '.join(files)}: {len(grid_cells)} cells, {jobs} training jobs"
            + (f", and at most {more} more where a step ratio is undecided (more_repeats)"
               if more else ""))
    return config, grid_cells, line
