"""Rule make_data: one seeded synthetic dataset (.npz + JSON sidecar with its sha256)."""

import sys

sys.stderr = open(snakemake.log[0], "w")

from rnnbench.measure.data import make_dataset, write_dataset  # noqa: E402

params = snakemake.params.dataset
sidecar = write_dataset(make_dataset(**params), params, snakemake.output.npz,
                        snakemake.output.sidecar)
print(f"{snakemake.output.npz}: {sidecar['arrays']}, sha256 {sidecar['sha256']}", file=sys.stderr)
