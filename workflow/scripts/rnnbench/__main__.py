"""``python -m rnnbench``: the ``rnnbench`` command (rnnbench.cli) without the install, e.g.
``PYTHONPATH=workflow/scripts python3 -m rnnbench jax PRESET OUT`` on a machine with numpy and
JAX alone."""

import sys

from rnnbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
