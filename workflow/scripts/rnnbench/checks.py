"""Every check of a config that runs before any job (common.smk), in one function, so that
the workflow and the tests (tests/test_config_fuzz.py) run the same ones."""

from __future__ import annotations

from pathlib import Path

from rnnbench import grid
from rnnbench.resources import check_fits


def own_claims(files: list[str | Path], config: dict,
               shipped: str | Path = "config.yaml") -> str | None:
    """A config of one's own judges its own claims: when config files other than ``shipped``
    (config.yaml in the working directory, read by the Snakefile's configfile:) are given and
    none of them sets ``claims`` or ``claims_from``, the shipped config's are dropped from
    ``config`` (in place); when they set one, the other is not inherited either. Returns a
    sentence when no claim is left, or None."""
    import yaml

    own = [Path(path) for path in files if Path(path).resolve() != Path(shipped).resolve()]
    if not own:
        return None
    named = set()
    for path in own:
        text = yaml.safe_load(path.read_text()) or {}
        named |= {"claims", "claims_from"} & set(text if isinstance(text, dict) else {})
    for key in {"claims", "claims_from"} - named:  # not inherited from the shipped config
        config[key] = []
    if named:
        return None
    return (f"claims: {', '.join(map(str, own))} names none, so no claim is judged (config.yaml's "
            "come from presets/seed-claims.yaml: add claims_from: [presets/seed-claims.yaml] "
            "to judge them too)")


def load_claims(config: dict, repo: str | Path) -> dict[int, tuple[str, int]]:
    """Add the claims of each file of ``claims_from`` to ``config["claims"]`` (in place), the
    file found in the working directory or else in ``repo``.

    Returns:
        {index in the merged claims: (file, index in that file)}, for the claims of files
        (claim_origin names them in an error).

    Raises:
        ValueError: naming a claims_from that is not a list, a file that is in neither place,
            or holds no list.
    """
    import yaml

    files = config.get("claims_from") or []
    if not isinstance(files, list):
        raise ValueError(f"claims_from: {files!r} is not a list of files, e.g. "
                         "[presets/seed-claims.yaml]")
    origins = {}
    for name in files:
        path = Path(name) if Path(name).exists() else Path(repo) / name
        if not path.is_file():
            raise ValueError(f"claims_from: {name}: no such file here or in {repo}")
        grid.check_config_file(path)
        claims = yaml.safe_load(path.read_text())
        if not isinstance(claims, list):
            raise ValueError(f"claims_from: {name}: holds no list of claims")
        before = list(config.get("claims") or [])
        origins.update({len(before) + k: (str(name), k) for k in range(len(claims))})
        config["claims"] = [*before, *claims]
    return origins


def claim_origin(message: str, origins: dict[int, tuple[str, int]]) -> str:
    """``message`` (an error naming ``claims.<index>``) with the claims_from file and the
    entry's index in it appended where the claim came from a file (load_claims' origins)."""
    import re

    found = re.search(r"\bclaims\.(\d+)", message)
    if found and int(found.group(1)) in origins:
        name, index = origins[int(found.group(1))]
        return f"{message} (entry {index} of claims_from file {name})"
    return message


def check_config(files: list[str | Path], config: dict, available_mb: int | None,
                 repo: str | Path | None = None, notes: list[str] | None = None) -> dict:
    """Check the config files and the merged ``config`` (filled in with the schema's defaults,
    in place), and that the grid's largest training job fits ``available_mb`` MiB (None: not
    checked, e.g. on a cluster, whose nodes are sized by each job's mem_mb request).

    Args:
        files: the config files as given (grid.check_config_file: YAML syntax, duplicate
            keys, YAML 1.1 readings).
        config: the config Snakemake loaded from them (and --config).
        available_mb: the memory a local job may use, in MiB.
        repo: where ``claims_from`` files are looked for after the working directory
            (default: the repository of this module).
        notes: gets what the checks changed that the user should know (own_claims).

    Returns:
        grid.cells(config): {cell_id: cell}.

    Raises:
        ValueError: one line naming the key (or file and line), the value and the fix.
    """
    for path in files:
        grid.check_config_file(path)
    note = own_claims(files, config)
    if note and notes is not None:
        notes.append(note)
    origins = load_claims(config, repo or Path(__file__).resolve().parents[3])
    try:
        grid.validate_config(config)
    except ValueError as error:  # the schema's complaints too (grid.schema_error)
        raise ValueError(claim_origin(str(error), origins)) from None
    cells = grid.cells(config)
    if available_mb is not None:
        check_fits(cells, config["num_samples"], available_mb)
    return cells
