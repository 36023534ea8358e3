"""Tests of ``bayeseval.counts.proxy``."""

from __future__ import annotations

import pytest

from bayeseval._backends.pandas_backend import PandasBackend
from bayeseval.counts.proxy import tabulate_proxy
from tests.helpers import _small


def test_a_back_end_without_proxy_cells_raises_type_error():
    class NoProxy(PandasBackend):
        engine = "spark"

        def proxy_cells(self, *args, **kwargs):
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"proxy='judge' is not supported for spark data"):
        tabulate_proxy(NoProxy(_small()), y_true="y_true", y_pred="y_pred", proxy="judge",
                       strata=None, metric="accuracy", pos_label=None, inclusion=None)
