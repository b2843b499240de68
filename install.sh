#!/usr/bin/env bash
# Create .venv/ from the hash-pinned locks in envs/locks/ for this Python (3.11, 3.12 or 3.13:
# envs/python-versions; envs/lock.sh writes them). Does nothing when the venv already holds
# exactly these locks. Usage: ./install.sh   (PYTHON=/path/to/python3.X to choose the Python,
# VENV=folder to install elsewhere than .venv)
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
venv=${VENV:-.venv}
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

locks=(envs/locks/py$version.txt envs/locks/py$version-dev.txt envs/locks/py$version-nodeps.txt)
stamp=$(cat "${locks[@]}" | sha256sum | cut -c1-16)
if [ -f "$venv/.installed" ] && [ "$(cat "$venv/.installed")" = "$stamp" ]; then
    exit 0
fi
"$python" -m venv "$venv"
pip=("$venv/bin/pip" install --disable-pip-version-check -q --require-hashes)
"${pip[@]}" -r "${locks[0]}"             # the workflow (what the images hold too)
"${pip[@]}" -r "${locks[1]}"             # the tests and linters
"${pip[@]}" --no-deps -r "${locks[2]}"   # tf-keras: see envs/requirements-nodeps.txt
# The venv must hold the CPU-only TensorFlow, with the legacy RNN cells from tf_keras.
"$venv/bin/python" - <<'PY'
import os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import tensorflow as tf
import tf_keras
build = tf.sysconfig.get_build_info()
assert not build.get("is_cuda_build"), "a CUDA build of TensorFlow got into the venv"
assert tf.compat.v1.nn.rnn_cell.BasicLSTMCell.__module__.startswith("tf_keras")
print(f"install.sh: TensorFlow {tf.__version__} (CPU build), tf_keras {tf_keras.__version__}")
PY
echo "$stamp" > "$venv/.installed"
