"""FLOP counts against hand counts, the time steps a batch computes, and the matmul peak
(rnnbench.grid.flop, rnnbench.measure.roofline)."""

import numpy as np
import pytest

from rnnbench.grid import flop
from rnnbench.measure import model, roofline


def test_cell_step_flop_hand_count():
    # LSTM, batch 2, input_dim 3, num_units 4: [2, 3 + 4] x [7, 16] = 2 * 2 * 7 * 16 FLOP
    assert flop.cell_step_flop("basic_lstm", 2, 3, 4) == 448
    assert flop.cell_step_flop("lstm", 2, 3, 4) == 448
    # GRU: [2, 7] x [7, 8] (gates) + [2, 7] x [7, 4] (candidate) = 224 + 112
    assert flop.cell_step_flop("gru", 2, 3, 4) == 336
    with pytest.raises(KeyError):
        flop.cell_step_flop("rnn", 2, 3, 4)


def test_step_flop_is_three_forward_passes_over_the_computed_steps():
    assert flop.step_flop("basic_lstm", 2, 3, 4, time_steps=5) == 3 * 5 * 448
    assert flop.step_flop("gru", 2, 3, 4, time_steps=2.5) == 3 * 2.5 * 336


def test_time_steps_per_step_follows_the_batches():
    lengths = np.array([1, 5, 2, 2, 3, 1])  # batch_size 2: batches [1, 5], [2, 2], [3, 1], ...
    assert flop.time_steps_per_step(lengths, 2, first=0, count=3) == pytest.approx(10 / 3)
    assert flop.time_steps_per_step(lengths, 2, first=1, count=1) == 2
    # the batch that wraps around: samples 4, 5 then 0, 1 with batch_size 4 -> step 1 = [3,1,1,5]
    assert flop.time_steps_per_step(lengths, 4, first=1, count=1) == 5


@pytest.mark.slow
def test_matmul_peak_is_measured():
    tf = model.import_tf()
    peak = roofline.measure_matmul_peak(tf, size=128, repeats=5, intra_op=1, inter_op=1,
                                        device="cpu")
    assert len(peak["seconds"]) == 5 and all(s > 0 for s in peak["seconds"])
    assert peak["flop_per_s"] == pytest.approx(2 * 128**3 / np.median(peak["seconds"]))
    assert 1e7 < peak["flop_per_s"] < 1e13  # a CPU core: between 10 MFLOP/s and 10 TFLOP/s
