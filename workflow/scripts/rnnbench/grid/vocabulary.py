"""Give every api's words, for tables, chart titles and FINDINGS.

What each api calls the two implementations and the setup's phases, and how an ablation or
an axis value is said. Result fields and table columns carry generic names (``init_s``,
``optimisation_s``, ...); the words of each api come in only when rendering
(rnnbench.grid.apis holds them).
"""

from __future__ import annotations

from typing import Any, Iterable

from rnnbench.grid.apis import APIS

API_WORDS = {name: dict(api.words) for name, api in APIS.items()}
"""Each api's own words for the two implementations and the setup's phases
(rnnbench.grid.apis: compat_v1 builds a graph and a Session; the keras apis trace a
tf.function and compile it on its first call; the JAX apis trace, lower and compile with
XLA)."""
MODES = {
    "train": "training steps",
    "inference": "inference (forward pass alone)",
}
"""The mode axis: what a measured step runs. train: forward, backward and Adam (the seed's);
inference: the forward pass and the loss, no gradient or optimizer in the graph (the same
graph construction or tracing, first call and steady steps). Inference fetches the loss
alone, so a cell with mode inference and fetches other than loss is left out
(cells.left_out)."""
FETCHES = {
    "train_op": "train_op fetched alone",
    "loss": "train_op and loss",
    "hooks": "the Estimator's hook fetches",
    "hooks_cold": "hook fetches not warmed up",
}
"""The fetches axis: what each training step fetches (axes.hook_step), in words."""


def api_words(apis: Iterable[str], key: str) -> str:
    """Return the words of ``key`` for the ``apis`` of a table or chart.

    Args:
        apis: the apis present.
        key: a key of API_WORDS' entries: static, dynamic or a phase's timing.

    Returns:
        The distinct words in API_WORDS order, joined by ' / ' ('graph construction /
        tracing').

    Raises:
        KeyError: for an unknown api or key.
    """
    present = set(apis)
    unknown = present - set(API_WORDS)
    if unknown:
        raise KeyError(f"unknown api {sorted(unknown)}")
    return " / ".join(dict.fromkeys(words[key] for api, words in API_WORDS.items()
                                    if api in present))


def impl_words(apis: Iterable[str]) -> str:
    """Name a ratio of the two implementations for ``apis``.

    Args:
        apis: the apis present.

    Returns:
        'static_rnn / dynamic_rnn' for compat_v1 alone, 'unroll=True / unroll=False' for the
        keras apis alone; for a mix, 'static / dynamic (static_rnn / dynamic_rnn; unroll=True /
        unroll=False)'.
    """
    pairs = list(dict.fromkeys(f"{API_WORDS[a]['static']} / {API_WORDS[a]['dynamic']}"
                               for a in API_WORDS if a in set(apis)))
    return pairs[0] if len(pairs) == 1 else f"static / dynamic ({'; '.join(pairs)})"


def ablation_words(axis: str, value: Any) -> str:
    """Say an ablation in words: ``axis`` at ``value``, away from its reference.

    cells.ablation_label joins them.

    Args:
        axis: an ablation axis (axes.ABLATION_DEFAULTS).
        value: the cell's value of it.

    Returns:
        E.g. 'dynamic loops to max_len', 'no Grappler', '2 intra-op threads'.

    Raises:
        KeyError: for an unknown axis (or a fetches or mode value without words).
    """
    words = {
        "loop_bound": lambda: "dynamic loops to max_len",
        "pass_sequence_length": lambda: "no sequence_length",
        "meta_optimizer": lambda: "no Grappler",
        "fetches": lambda: FETCHES[value],
        "parallel_iterations": lambda: f"parallel_iterations {value}",
        "swap_memory": lambda: "swap_memory",
        "intra_op_parallelism_threads": lambda: f"{value} intra-op threads",
        "inter_op_parallelism_threads": lambda: f"{value} inter-op threads",
        "mode": lambda: MODES[value],
        "unroll": lambda: f"static at scan unroll={value}",
    }
    return words[axis]()
