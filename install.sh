#!/usr/bin/env bash
# Create .venv/ from the hash-pinned locks in envs/locks/ for this Python (3.11, 3.12 or 3.13:
# envs/python-versions; envs/lock.sh writes them). Does nothing when the venv already holds
# exactly these locks. Usage: ./install.sh   (PYTHON=/path/to/python3.X to choose the Python,
# VENV=folder to install elsewhere than .venv, FLAVOR=cuda for TensorFlow's CUDA build with its
# CUDA and cuDNN wheels, on a machine with an NVIDIA GPU and driver: config device: gpu)
# Then the project itself, editable (.venv/bin/rnnbench, the command for users), again only when
# pyproject.toml changed; offline: the locks hold its build backend, setuptools.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
venv=${VENV:-.venv}
flavor=${FLAVOR:-cpu}
case $flavor in
    cpu) suffix= ;;
    cuda) suffix=-cuda ;;
    *) echo "install.sh: FLAVOR must be cpu (the default) or cuda, not '$flavor'" >&2; exit 1 ;;
esac
supported=$(paste -sd' ' envs/python-versions)

version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || {
    echo "install.sh: '$python' does not run; install Python ${supported// /, } or set PYTHON=" >&2
    exit 1; }
if ! grep -qx "$version" envs/python-versions; then
    echo "install.sh: $python is Python $version; envs/locks/ has locks for Python" \
         "${supported// /, } (set PYTHON=/path/to/python3.X)" >&2
    exit 1
fi
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "install.sh: $python has no venv module; on Debian/Ubuntu: apt-get install python3-venv" >&2
    exit 1
fi

locks=(envs/locks/py$version$suffix.txt envs/locks/py$version-dev.txt envs/locks/py$version-nodeps.txt)
stamp=$(cat "${locks[@]}" | sha256sum | cut -c1-16)
project_stamp=$(sha256sum pyproject.toml | cut -c1-16)

install_project() {  # the rnnbench package and command, from this folder, editable
    if [ -f "$venv/.installed-project" ] && [ "$(cat "$venv/.installed-project")" = "$project_stamp" ]; then
        return
    fi
    "$venv/bin/pip" install --disable-pip-version-check -q --no-deps --no-build-isolation \
        --no-index -e .
    echo "$project_stamp" > "$venv/.installed-project"
}

if [ -f "$venv/.installed" ] && [ "$(cat "$venv/.installed")" = "$stamp" ]; then
    install_project
    exit 0
fi
rm -f "$venv/.installed-project"
"$python" -m venv "$venv"
pip=("$venv/bin/pip" install --disable-pip-version-check -q --require-hashes)
"${pip[@]}" -r "${locks[0]}"             # the workflow (what the images hold too)
"${pip[@]}" -r "${locks[1]}"             # the tests and linters
"${pip[@]}" --no-deps -r "${locks[2]}"   # tf-keras: see envs/requirements-nodeps.txt
# The venv must hold the TensorFlow build of its flavor, with the legacy RNN cells from tf_keras.
"$venv/bin/python" - "$flavor" <<'PY'
import os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
import tf_keras
flavor = sys.argv[1]
build = tf.sysconfig.get_build_info()
assert bool(build.get("is_cuda_build")) == (flavor == "cuda"), (flavor, dict(build))
assert tf.compat.v1.nn.rnn_cell.BasicLSTMCell.__module__.startswith("tf_keras")
gpus = len(tf.config.list_physical_devices("GPU")) if flavor == "cuda" else 0
print(f"install.sh: TensorFlow {tf.__version__} ({flavor} build"
      + (f", CUDA {build.get('cuda_version')}, {gpus} GPU(s) visible" if flavor == "cuda" else "")
      + f"), tf_keras {tf_keras.__version__}")
PY
install_project
echo "$stamp" > "$venv/.installed"
