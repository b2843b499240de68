#!/usr/bin/env bash
# Build the workflow's Apptainer image and print its path.
# Usage: containers/build.sh [cpu|cuda] [TF_VERSION] [PYTHON]
#   cpu   TensorFlow CPU-only (about 0.5 GB; what CI builds and tests)
#   cuda  TensorFlow with its CUDA and cuDNN wheels (about 3.6 GB; for GPU hosts)
#   TF_VERSION  2.21 (default: the venv's, with the whole workflow), or another version with
#         locks in containers/ (2.12, 2.16: training images; see lock.sh)
#   PYTHON  the image's Python, which must be the Python of the Snakemake that runs it: 3.11
#         (Debian 12) or 3.13 (Debian 13; TensorFlow 2.21 only). Default: the Python of the
#         repository's .venv, else python3's
# The image goes to a cache folder, named by the hash of rnnbench.def and the image's locks
# (rnnbench/pipeline/container.py); containers/images/ gets a link to it, which the workflow's
# container: names. When that image exists, this only makes the link; when a real image file
# (copied there, say on a cluster) already has that name, it leaves it alone. Needs Apptainer
# on PATH (on Debian 12: export PATH="$(.ci/install-apptainer.sh):$PATH") and root (debootstrap).
# The workflow records the image's sha256 (computed from the file it runs, then kept in
# <image>.sha256 with the file's size and mtime).
# Cache: ${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-~/.cache}/rnnbench}/images
set -euo pipefail
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
if [ $# -gt 3 ]; then echo "build.sh: a flavor (cpu or cuda), a TensorFlow version and a Python version, not '$*'" >&2; exit 2; fi
flavor=${1-cpu}
tf_version=${2-2.21}
version='import sys; print("%d.%d" % sys.version_info[:2])'
python_version=${3-$("$repo/.venv/bin/python" -c "$version" 2>/dev/null || python3 -c "$version")}
case $flavor in
    cpu|cuda) ;;
    gpu) echo "build.sh: the flavor is cuda (the image for device: gpu), not 'gpu'" >&2; exit 2 ;;
    [0-9]*) echo "build.sh: the flavor comes first: containers/build.sh cpu $flavor" >&2; exit 2 ;;
    *) echo "build.sh: the flavor must be cpu or cuda, not '$flavor'" >&2; exit 2 ;;
esac
# the image's path, Debian release and locks (relative to containers/)
arguments=$(PYTHONPATH="$repo/workflow/scripts" python3 -m rnnbench.pipeline.container "$repo" "$flavor" "$tf_version" \
    "$python_version") || exit 2
{ read -r link; read -r suite; read -r lock; read -r nodeps_lock; } <<< "$arguments"
if [ -f "$link" ] && [ ! -L "$link" ]; then
    echo "build.sh: $link is an image file (not a link into the cache): using it as it is" >&2
    echo "$link"
    exit 0
fi
cache=${RNNBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnbench}/images
image=$cache/$(basename "$link")

if [ ! -f "$image" ]; then
    if ! command -v apptainer >/dev/null; then
        echo "build.sh: apptainer is not on PATH; on Debian 12: export PATH=\"\$($repo/.ci/install-apptainer.sh):\$PATH\"" >&2
        exit 1
    fi
    mirror=$("$repo/containers/debian-mirror")
    # the index this machine's pip is configured with, or none: then pip's own default
    index=${PIP_INDEX_URL:-$(python3 -m pip config get global.index-url 2>/dev/null || true)}
    ca=${RNNBENCH_CA_BUNDLE:-${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}}
    if [ ! -r "$ca" ]; then
        echo "build.sh: cannot read the CA bundle '$ca' (from RNNBENCH_CA_BUNDLE, PIP_CERT or" \
             "SSL_CERT_FILE); set RNNBENCH_CA_BUNDLE to the bundle pip trusts" >&2
        exit 1
    fi
    ca=$(readlink -f "$ca")
    case $ca in *[[:space:]]*)
        echo "build.sh: the CA bundle's path '$ca' has a space, which Apptainer's %files" \
             "cannot copy: set RNNBENCH_CA_BUNDLE to a copy elsewhere" >&2; exit 1 ;;
    esac
    mkdir -p "$cache"
    tmp=$(mktemp "$image.XXXXXX.tmp")
    trap 'rm -f "$tmp"' EXIT
    echo "build.sh: building $image (Debian $suite from $mirror, Python packages from" \
         "${index:-the default index of pip}," \
         "CA bundle $ca)" >&2
    # zstd, not the default gzip: gzip took 106 s of a 188 s CPU build here and made every
    # `import tensorflow` in the image ~4.6 s (against ~2.8 s).
    (cd "$repo/containers" && apptainer build --force \
        --build-arg "FLAVOR=$flavor" --build-arg "TF_VERSION=$tf_version" --build-arg "MIRROR=$mirror" \
        --build-arg "PYTHON=$python_version" --build-arg "SUITE=$suite" \
        --build-arg "LOCK=$lock" --build-arg "NODEPS_LOCK=$nodeps_lock" \
        --build-arg "INDEX_URL=$index" --build-arg "CA_BUNDLE=$ca" \
        --mksquashfs-args "-comp zstd -Xcompression-level 3" \
        "$tmp" rnnbench.def) >&2
    mv "$tmp" "$image"
fi
mkdir -p "$repo/containers/images"
ln -sfn "$image" "$link"
echo "$link"
