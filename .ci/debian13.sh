#!/usr/bin/env bash
# The quick start from scratch on a second distribution: in a bare Debian 13 (trixie, Python
# 3.13; .ci/debian13.def, built with debootstrap by Apptainer and cached by the definition's
# hash), on a fresh clone of this commit, the README's first command on the tiny config of the
# tests and its second on the unit tests. Needs Apptainer on PATH and root (debootstrap); pip's
# downloads are cached in ${RNNBENCH_CACHE:-~/.cache/rnnbench}/pip (by pip, by content hash).
# Usage: .ci/debian13.sh   (prints what it ran and how long each step took)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnbench}
image=$cache/images/debian13-$(sha256sum "$repo/.ci/debian13.def" | cut -c1-16).sif
if [ ! -f "$image" ]; then
    mkdir -p "$cache/images"
    tmp=$(mktemp "$image.XXXXXX.tmp")
    trap 'rm -f "$tmp"' EXIT
    apptainer build --force --build-arg "MIRROR=$("$repo/containers/debian-mirror")" \
        "$tmp" "$repo/.ci/debian13.def" >&2
    mv "$tmp" "$image"
fi
work=$(mktemp -d /tmp/rnnbench-debian13.XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/rnnbench"
mkdir -p "$cache/pip"
# the CA bundle pip trusts here (as containers/build.sh: a TLS-intercepting proxy needs it)
ca=$(readlink -f "${RNNBENCH_CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}")
# --containall: none of this machine's home, /tmp or variables; the network stays (pip)
apptainer exec --containall --bind "$work/rnnbench:/src" --bind "$cache/pip:/pip-cache" \
    --bind "$ca:/host-ca.crt:ro" --env PIP_CERT=/host-ca.crt \
    --env PIP_CACHE_DIR=/pip-cache ${PIP_INDEX_URL:+--env PIP_INDEX_URL="$PIP_INDEX_URL"} \
    --pwd /src "$image" bash -euc '
        echo "debian13: $(. /etc/os-release; echo "$PRETTY_NAME"), $(python3 --version)"
        SECONDS=0
        ./install.sh
        echo "debian13: ./install.sh took ${SECONDS} s"; SECONDS=0
        ./install.sh && .venv/bin/snakemake --cores 2 --configfile tests/tiny.yaml --quiet rules
        test -s results/FINDINGS.md
        echo "debian13: the main job on tests/tiny.yaml took ${SECONDS} s"; SECONDS=0
        ./install.sh && .venv/bin/pytest -q -p no:cacheprovider tests/grid/test_grid.py \
            tests/results/test_results.py tests/report/test_findings.py tests/grid/test_config_fuzz.py \
            tests/stats/test_intervals.py tests/stats/test_claims.py tests/stats/test_scaling.py
        echo "debian13: the unit tests took ${SECONDS} s"'
