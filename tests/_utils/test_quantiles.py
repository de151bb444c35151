import numpy as np
import pytest

from rateopt._utils._quantiles import quantile_positions


@pytest.mark.parametrize("n_bins", [1, 3, 16, 256])
def test_quantile_positions_are_numpys_inverted_cdf_quantiles(n_bins):
    # the reference: numpy.quantile's inverted_cdf quantile of a sorted run of distinct values is the value
    # at the position returned
    lengths = np.array([1, 2, 3, 7, 255, 256, 257, 1000, 4099], dtype=np.int64)
    pos = quantile_positions(lengths, n_bins)
    assert pos.shape == (lengths.size, n_bins)
    probs = np.arange(n_bins) / n_bins
    for m, p in zip(lengths.tolist(), pos):
        run = np.arange(m, dtype=np.float64) * 0.5 - 3.0  # sorted, distinct
        assert np.array_equal(run[p], np.quantile(run, probs, method="inverted_cdf"))
