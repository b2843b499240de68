#!/usr/bin/env bash
# Create .venv/ from the pinned requirements in envs/ (Python 3.11). Does nothing when .venv/
# already holds exactly these pins. Usage: ./install.sh   (PYTHON=/path/to/python3.11 to choose)
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}

version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || {
    echo "install.sh: '$python' does not run; install Python 3.11 or set PYTHON=" >&2; exit 1; }
if [ "$version" != "3.11" ]; then
    echo "install.sh: $python is Python $version; the pins in envs/ are for Python 3.11" \
         "(set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
    echo "install.sh: $python has no venv module; on Debian/Ubuntu: apt-get install python3-venv" >&2
    exit 1
fi

stamp=$(cat envs/requirements.txt envs/requirements-nodeps.txt | sha256sum | cut -c1-16)
if [ -f .venv/.installed ] && [ "$(cat .venv/.installed)" = "$stamp" ]; then
    exit 0
fi
"$python" -m venv .venv
.venv/bin/pip install --disable-pip-version-check -q -r envs/requirements.txt
.venv/bin/pip install --disable-pip-version-check -q --no-deps -r envs/requirements-nodeps.txt
# The venv must hold the CPU-only TensorFlow, with the legacy RNN cells from tf_keras.
.venv/bin/python - <<'PY'
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
echo "$stamp" > .venv/.installed
