"""Synthetic data: determinism, shapes, bounds, checksum and pickle refusal (rnnbench.measure.data)."""

import json

import numpy as np
import pytest

from rnnbench.measure import data

PARAMS = {"max_len": 12, "sequence_length": {"uniform": [3, 12]}, "input_dim": 5,
          "num_classes": 7, "num_samples": 40, "seed": 3}


def write(tmp_path, name, params=PARAMS):
    npz, sidecar = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
    data.write_dataset(data.make_dataset(**params), params, npz, sidecar)
    return npz, sidecar


def test_same_config_gives_the_same_bytes(tmp_path):
    npz_a, side_a = write(tmp_path, "a")
    npz_b, side_b = write(tmp_path, "b")
    assert npz_a.read_bytes() == npz_b.read_bytes()
    assert json.loads(side_a.read_text())["sha256"] == data.sha256_file(npz_b)
    npz_c, _ = write(tmp_path, "c", {**PARAMS, "seed": 4})
    assert npz_c.read_bytes() != npz_a.read_bytes()


def test_shapes_dtypes_and_ranges():
    arrays = data.make_dataset(**PARAMS)
    assert arrays["inputs"].shape == (40, 12, 5) and arrays["inputs"].dtype == np.float32
    assert arrays["sequence_length"].shape == (40,) and arrays["sequence_length"].dtype == np.int32
    assert arrays["labels"].shape == (40,) and arrays["labels"].dtype == np.int32
    assert arrays["sequence_length"].min() >= 3 and arrays["sequence_length"].max() <= 12
    assert len(np.unique(arrays["sequence_length"])) > 1  # really variable-length
    assert 0 <= arrays["labels"].min() and arrays["labels"].max() < 7
    assert 0.0 <= arrays["inputs"].min() and arrays["inputs"].max() < 1.0


@pytest.mark.parametrize("spec, expected", [(4, {4}), ("max_len", {12})])
def test_fixed_sequence_lengths(spec, expected):
    arrays = data.make_dataset(**{**PARAMS, "sequence_length": spec})
    assert set(arrays["sequence_length"].tolist()) == expected


def test_sequence_length_above_max_len_is_refused():
    with pytest.raises(ValueError, match="above max_len 12"):
        data.make_dataset(**{**PARAMS, "sequence_length": 13})


def test_load_round_trips_and_checks_the_sidecar(tmp_path):
    npz, sidecar = write(tmp_path, "a")
    arrays, meta = data.load_dataset(npz, sidecar)
    expected = data.make_dataset(**PARAMS)
    for name in expected:
        np.testing.assert_array_equal(arrays[name], expected[name])
    assert meta["params"] == PARAMS
    assert meta["arrays"]["inputs"] == {"shape": [40, 12, 5], "dtype": "float32"}


def test_a_changed_file_fails_the_checksum(tmp_path):
    npz, sidecar = write(tmp_path, "a")
    raw = bytearray(npz.read_bytes())
    raw[-100] ^= 0xFF
    npz.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="does not match"):
        data.load_dataset(npz, sidecar)
    # its sidecar changed with it: numpy's reading fails, named in one line, not a zipfile
    # traceback
    import hashlib
    import json

    raw[len(raw) // 2] ^= 0xFF
    npz.write_bytes(bytes(raw))
    record = json.loads(sidecar.read_text())
    sidecar.write_text(json.dumps({**record, "sha256": hashlib.sha256(raw).hexdigest()}))
    with pytest.raises(ValueError, match=r"a.npz: not a whole dataset \(Bad CRC-32 for file "):
        data.load_dataset(npz, sidecar)


def test_pickled_arrays_are_refused(tmp_path):
    npz = tmp_path / "p.npz"
    np.savez(npz, inputs=np.array([{"x": 1}], dtype=object))
    sidecar = tmp_path / "p.json"
    sidecar.write_text(json.dumps({"sha256": data.sha256_file(npz)}))
    with pytest.raises(ValueError, match="allow_pickle=False"):
        data.load_dataset(npz, sidecar)
