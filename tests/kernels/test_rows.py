"""``unique_rows`` against ``np.unique(..., axis=0)`` (the reference it replaces)."""

from __future__ import annotations

import numpy as np
import pytest

from bayeseval._kernels.rows import unique_rows


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("width", [1, 2, 3])
def test_unique_rows_equals_numpy_unique_on_rows(seed, width):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    cols = [rng.integers(0, 6, n) for _ in range(width - 1)] + [rng.choice([0.0, 0.5, 1.0, 2.25], n)]
    rows, inverse, counts = unique_rows(*cols)
    want, want_inv, want_counts = np.unique(
        np.column_stack(cols) if n else np.empty((0, width)), axis=0, return_inverse=True, return_counts=True
    )
    np.testing.assert_array_equal(rows, want)
    np.testing.assert_array_equal(inverse, want_inv.ravel())
    np.testing.assert_array_equal(counts, want_counts)
    assert rows.dtype == np.column_stack(cols).dtype if n else True
