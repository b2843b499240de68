"""A test helper: which steps of a training job fetch the hook set (axes.hook_step of each),
the whole plan at once, for tests that check bench's fetches against it."""

from rnnbench.grid.axes import hook_step


def fetch_plan(fetches: str, hook_every: int, warmup_steps: int, steps: int) -> list[bool]:
    """Which steps fetch the hook set: one bool per step, the first step, then the
    ``warmup_steps`` warm-up steps, then the ``steps`` measured ones (True: the every-step
    fetches plus the hook tensors); hook_step of each.

    Raises:
        ValueError: for an unknown ``fetches`` (names it).
    """
    return [hook_step(fetches, hook_every, warmup_steps, k)
            for k in range(1 + warmup_steps + steps)]
