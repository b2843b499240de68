#!/usr/bin/env bash
# Build the workflow's Apptainer image and print its path. Usage: containers/build.sh [cpu|cuda]
#   cpu   TensorFlow CPU-only (about 0.5 GB; what CI builds and tests)
#   cuda  TensorFlow with its CUDA and cuDNN wheels (about 3.6 GB; for GPU hosts)
# The image goes to a cache folder, named by the hash of rnnbench.def and the flavor's locks
# (rnnbench/container.py); containers/images/ gets a link to it, which the workflow's
# container: names. When that image exists, this only makes the link. Needs Apptainer on
# PATH (on Debian 12: export PATH="$(.ci/install-apptainer.sh):$PATH") and root (debootstrap).
# Cache: ${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/rnnbench}/images
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
flavor=${1:-cpu}
case $flavor in
    cpu|cuda) ;;
    *) echo "build.sh: the flavor must be cpu or cuda, not '$flavor'" >&2; exit 2 ;;
esac
link=$(python3 "$repo/workflow/scripts/rnnbench/container.py" "$repo" "$flavor")
cache=${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnbench}/images
image=$cache/$(basename "$link")

if [ ! -f "$image" ]; then
    if ! command -v apptainer >/dev/null; then
        echo "build.sh: apptainer is not on PATH; on Debian 12: export PATH=\"\$($repo/.ci/install-apptainer.sh):\$PATH\"" >&2
        exit 1
    fi
    mirror=$("$repo/containers/debian-mirror")
    index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
    index=${index:-https://pypi.org/simple}
    ca=${RNNBENCH_CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}
    mkdir -p "$cache"
    tmp=$(mktemp "$image.XXXXXX.tmp")
    trap 'rm -f "$tmp"' EXIT
    echo "build.sh: building $image (Debian from $mirror, Python packages from $index)" >&2
    # zstd, not the default gzip: gzip took 106 s of a 188 s CPU build here and made every
    # `import tensorflow` in the image ~4.6 s (against ~2.8 s).
    (cd "$repo/containers" && apptainer build --force \
        --build-arg "FLAVOR=$flavor" --build-arg "MIRROR=$mirror" \
        --build-arg "INDEX_URL=$index" --build-arg "CA_BUNDLE=$ca" \
        --mksquashfs-args "-comp zstd -Xcompression-level 3" \
        "$tmp" rnnbench.def) >&2
    sha256sum "$tmp" | cut -d' ' -f1 > "$image.sha256"
    mv "$tmp" "$image"
fi
mkdir -p "$repo/containers/images"
ln -sfn "$image" "$link"
echo "$link"
