"""Check what a config file holds before it is validated, and gather claims from elsewhere.

YAML that reads other than it looks: check_config_file. Claims from elsewhere: dropped from
the shipped config when a config of one's own is given (own_claims), and read from
``claims_from`` files (load_claims). configcheck.check_config_files runs these first.

PyYAML is imported where used: config.smk reads check_config_file before the workflow.
"""

from __future__ import annotations

import re
from pathlib import Path


MAX_VALUES = 100_000
"""The most values (YAML nodes, aliases expanded) a config file may hold: a grid of a few
thousand cells holds far fewer; nine aliases of nine aliases... would hold billions."""


def _expanded_size(node, path: str | Path, memo: dict, open_nodes: set) -> int:
    """check_config_file's count of the values ``node`` holds once its aliases are expanded.

    Raises:
        ValueError: a node that holds itself (an alias inside its own anchor), or more than
            MAX_VALUES values.
    """
    if id(node) in memo:
        return memo[id(node)]
    if id(node) in open_nodes:
        raise ValueError(f"{path}, line {node.start_mark.line + 1}: an alias inside its own "
                         "anchor (the value would hold itself): write the value out")
    open_nodes.add(id(node))
    children = node.value if isinstance(node.value, list) else []
    size = 1 + sum(_expanded_size(child, path, memo, open_nodes)
                   for item in children for child in (item if isinstance(item, tuple) else
                                                       (item,)))
    open_nodes.discard(id(node))
    if size > MAX_VALUES:
        raise ValueError(f"{path}: its aliases expand to over {MAX_VALUES:,} values: write "
                         "the values out, without nested aliases")
    memo[id(node)] = size
    return size


def _walk_yaml(node, where: list, path: str | Path) -> None:
    """check_config_file's walk through the YAML nodes of ``path`` (``where``: the key path
    of ``node``)."""
    import yaml

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
            _walk_yaml(value, [*where, key_node.value], path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk_yaml(item, [*where, i], path)
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


def sources_of(message: str, files: list[str | Path], overrides: dict | None = None) -> str:
    """Say which file set each top-level key a message names, where several files were read.

    A cross-field error ("max_warmup_steps: 2 is below warmup_steps 100") may join a value
    of config.yaml with one of a preset: naming only the preset would blame it for both.

    Args:
        message: the error's text.
        files: the config files read, in order (a later file's keys win).
        overrides: --config's keys, which win over every file's.

    Returns:
        `` (max_warmup_steps from config.yaml; warmup_steps from presets/x.yaml)``, or ''
        where one file was read, or the message names no key of them.
    """
    import yaml

    if len({str(path) for path in files}) < 2:
        return ""
    where = {}
    for path in files:
        try:
            keys = yaml.safe_load(Path(path).read_text())
        except (OSError, ValueError, yaml.YAMLError):
            continue
        where.update({str(key): str(path) for key in keys} if isinstance(keys, dict) else {})
    where.update({str(key): "--config" for key in overrides or {}})
    named = [key for key in where if re.search(rf"(?<![\w.]){re.escape(key)}\b", message)]
    return (" (" + "; ".join(f"{key} from {where[key]}" for key in named) + ")") if named else ""


def base_config(repo: str | Path) -> str:
    """Return the config file under every grid: ``config.yaml`` here, else the workflow's own.

    Never the schema's defaults alone, so that a preset given with --configfile changes
    config.yaml's values wherever it runs. Read by the Snakefile (config.smk) and by ``rnnbench
    check``.

    Args:
        repo: the repository (Snakemake's --directory may be elsewhere).

    Returns:
        "config.yaml" where the working directory has one; else ``<repo>/config.yaml``.
    """
    return "config.yaml" if Path("config.yaml").exists() else str(Path(repo) / "config.yaml")



def layered_files(paths: list[str | Path], repo: str | Path) -> tuple[str, list[str]]:
    """The config files a check outside Snakemake reads, in the order their keys apply.

    The files go over base_config unless it is given, or the first file is a config.yaml of
    another folder: that folder's grid, as ``snakemake --directory FOLDER`` reads it, over
    nothing.

    Args:
        paths: the config files given (none: the base config alone).
        repo: the repository (base_config's).

    Returns:
        (the base, the files): as text, the files in the order their keys apply.
    """
    files = [str(path) for path in paths]
    base = files[0] if files and Path(files[0]).name == "config.yaml" else base_config(repo)
    if not any(Path(path).resolve() == Path(base).resolve() for path in files):
        files.insert(0, base)  # as the Snakefile's configfile: under --configfile's
    return base, files


def source_note(shipped: str | Path, files: list[str | Path]) -> str | None:
    """Say where the grid is read from when the working directory has no config.yaml.

    Args:
        shipped: the base config file (base_config): absolute where it is the workflow's own.
        files: the config files Snakemake read (the base among them).

    Returns:
        The note (its files in the order their keys apply), or None with a config.yaml here.
    """
    if not Path(shipped).is_absolute():
        return None
    read_from = [str(shipped), *(str(f) for f in files if str(f) != str(shipped))]
    return (f"this working directory has no config.yaml: the grid is read from "
            f"{', then '.join(read_from)} (each later file's keys win)")

def check_config_file(path: str | Path, keys: bool = True) -> None:
    """Refuse what YAML reads silently otherwise in a config file.

    That is a key given twice in one mapping (YAML keeps the last), and a plain number that
    YAML 1.1 reads other than it looks: a leading zero (``07``, ``010`` = 8 as an octal) or a
    sexagesimal ``1:30`` (= 90). Quoted, such a value is a string (and the schema says what it
    must be). Also an exponent without a dot or sign (``1e5`` reads as text).

    Args:
        path: the file.
        keys: True for a config file, which must hold a mapping of keys (as Snakemake asks);
            False for a claims_from list.

    Raises:
        ValueError: naming the file, the line, the key (its path, e.g. ``claims.0.id``), the
            value and the fix; naming the file, line and column of a YAML syntax error; naming
            a file that cannot be read or is not UTF-8, or (with ``keys``) that holds no
            mapping of keys (empty, comments only, a list), which Snakemake refuses.
    """
    import yaml

    if Path(path).exists() and not Path(path).is_file():  # a pipe or device: read once, or never ends
        raise ValueError(f"{path}: not a regular file: save the config to a file and give that")
    try:
        with open(path) as handle:
            text = handle.read()
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None:
            _expanded_size(root, path, {}, set())
        yaml.safe_load(text)  # a tag SafeLoader cannot construct: !foo, !!python/...
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror}): check the path given to "
                         "--configfile") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {error.start}): save it as UTF-8") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        raise ValueError(f"{path}, line {mark.line + 1}, column {mark.column + 1}: not valid "
                         f"YAML ({error.problem or error.context}): fix the syntax there") from None
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply for YAML's reader: write a flat list "
                         "for each key") from None
    except yaml.YAMLError as error:  # the reader's: a control character
        raise ValueError(f"{path}: not valid YAML ({' '.join(str(error).split())}): remove "
                         "that character") from None
    if keys and not isinstance(root, yaml.MappingNode):  # as Snakemake refuses it
        what = "holds no keys (it is empty, or comments only)" if root is None else \
            "is not a mapping of keys at top level"
        raise ValueError(f"{path}: {what}: Snakemake refuses such a config file; write the "
                         "keys to change (e.g. steps: 200), or leave the file out")
    if root is not None:
        _walk_yaml(root, [], path)


def own_claims(files: list[str | Path], config: dict,
               shipped: str | Path = "config.yaml", overrides: dict | None = None) -> str | None:
    """Make a config of one's own judge its own claims, dropping the shipped config's.

    When config files other than ``shipped`` are given and neither they nor ``overrides`` set
    ``claims`` or ``claims_from``, the shipped config's are dropped from ``config`` (in place).
    When they set one, the other is not inherited either. A key set in ``overrides`` (Snakemake's
    --config) is kept as given.

    Args:
        files: the config files given.
        config: the merged config, changed in place.
        shipped: config.yaml in the working directory, read by the Snakefile's configfile:.
        overrides: the keys given on the command line (--config), which win over every file.

    Returns:
        A sentence when no claim is left, or None.
    """
    import yaml

    own = [Path(path) for path in files if Path(path).resolve() != Path(shipped).resolve()]
    if not own:
        return None
    named = set()
    for path in own:
        text = yaml.safe_load(path.read_text()) or {}
        named |= {"claims", "claims_from"} & set(text if isinstance(text, dict) else {})
    named |= {"claims", "claims_from"} & set(overrides or {})
    for key in {"claims", "claims_from"} - named:  # not inherited from the shipped config
        config[key] = []
    if named:
        return None
    return f"claims: {', '.join(map(str, own))} names none, so no claim is judged" + \
        _dropped_claims(shipped)


def _dropped_claims(shipped: str | Path) -> str:
    """Name the claims of ``shipped`` that own_claims dropped, and how to keep them."""
    import yaml

    try:
        text = yaml.safe_load(Path(shipped).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ""
    text = text if isinstance(text, dict) else {}
    ids = [str(claim.get("id")) for claim in text.get("claims") or [] if isinstance(claim, dict)]
    given = [f"claims: ({', '.join(ids)})"] if ids else []
    given += [f"claims_from: {text['claims_from']}"] if text.get("claims_from") else []
    if not given:
        return ""
    return (f" ({shipped}'s {' and '.join(given)} are left out: repeat them in your config "
            "file to judge them too)")


def load_claims(config: dict, repo: str | Path) -> dict[int, tuple[str, int]]:
    """Add the claims of each file of ``claims_from`` to ``config["claims"]``, in place.

    Args:
        config: the merged config.
        repo: where a file is looked for when the working directory lacks it.

    Returns:
        {index in the merged claims: (file, index in that file)}, for the claims of files
        (claim_origin names them in an error).

    Raises:
        ValueError: naming a claims_from that is not a list, a file that is in neither place,
            is listed twice, or holds no list; and check_config_file's errors.
    """
    import yaml

    files = config.get("claims_from") or []
    if not isinstance(files, list):
        raise ValueError(f"claims_from: {files!r} is not a list of files, e.g. "
                         "[presets/seed-claims.yaml]")
    origins, read = {}, {}
    for name in files:
        path = Path(name) if Path(name).exists() else Path(repo) / name
        if path.is_dir():
            raise ValueError(f"claims_from: {name}: a folder, not a file of claims")
        if not path.is_file():
            raise ValueError(f"claims_from: {name}: no such file here or in {repo}")
        if path.resolve() in read:
            raise ValueError(f"claims_from: {name}: the same file as {read[path.resolve()]}, "
                             "listed twice (its claims would be judged twice): list it once")
        read[path.resolve()] = name
        check_config_file(path, keys=False)
        claims = yaml.safe_load(path.read_text())
        if not isinstance(claims, list):
            raise ValueError(f"claims_from: {name}: holds no list of claims")
        before = list(config.get("claims") or [])
        origins.update({len(before) + k: (str(name), k) for k in range(len(claims))})
        config["claims"] = [*before, *claims]
    return origins


def read_config(files: list[str | Path], repo: str | Path, claims: bool = True) -> dict:
    """Read the keys of config files as YAML reads them (no schema, no defaults).

    The one reader of config files outside the workflow's validation (which
    configcheck.check_config_files does).

    Args:
        files: the config files; each later file's keys go over the earlier ones'.
        repo: where load_claims looks for claims_from files.
        claims: whether to add claims_from's claims (load_claims).

    Returns:
        The merged config.

    Raises:
        ValueError: check_config_file's (a file that is not YAML, holds no mapping of keys,
            or a key twice), and load_claims' errors.
    """
    import yaml

    config: dict = {}
    for path in files:
        check_config_file(path)
        config.update(yaml.safe_load(Path(path).read_text()) or {})
    if claims:
        config.setdefault("claims", [])
        load_claims(config, repo)
    return config


def claim_origin(message: str, origins: dict[int, tuple[str, int]]) -> str:
    """Add to an error naming ``claims.<index>`` the claims_from file the claim came from.

    Args:
        message: the error's message.
        origins: load_claims' origins.

    Returns:
        ``message``, with the claims_from file and the entry's index in it appended where the
        claim came from a file.
    """
    found = re.search(r"\bclaims\.(\d+)", message)
    if found and int(found.group(1)) in origins:
        name, index = origins[int(found.group(1))]
        return f"{message} (entry {index} of claims_from file {name})"
    return message
