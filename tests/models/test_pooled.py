"""PooledModel: validation naming the field, its repr, and the parts an entry point reads.

References: the model names, priors and engines fit_hierarchical accepts, written out.
"""

from __future__ import annotations

import pytest
from scipy import stats

from bayeseval import PooledModel
from bayeseval.models.pooled import model_parts
from bayeseval.models.priors import Prior


@pytest.mark.parametrize(
    "args, kwargs, exc, text",
    [
        ((3,), {}, TypeError, "model.name must be a model name (str), got 3"),
        (("flat",), {}, ValueError, "model.name must be one of"),
        (("robust",), {"prior": "flat"}, ValueError, "model.prior: unknown prior 'flat'"),
        (("robust",), {"prior": {"sigma": stats.beta(1, 1)}}, ValueError, "model.prior: prior dict keys"),
        (("robust",), {"engine": "stan"}, ValueError, "model.engine must be one of 'exact', 'pymc', got 'stan'"),
        (("robust",), {"engine": 1}, TypeError, "model.engine"),
    ],
)
def test_validation_names_the_field(args, kwargs, exc, text):
    with pytest.raises(exc) as err:
        PooledModel(*args, **kwargs)
    assert text in str(err.value)


def test_every_name_prior_and_engine_of_the_entry_points_is_accepted():
    for name in ("beta_binomial", "robust", "logit_normal", "auto", "crossed"):
        assert PooledModel(name).name == name
    mu = stats.beta(2, 18)
    assert PooledModel("robust", prior={"mu": mu}).prior == {"mu": mu}
    prior = Prior(name="bda", mu=None, kappa=None, improper=True)
    assert PooledModel("beta_binomial", prior=prior, engine="pymc").engine == "pymc"


def test_repr_shows_the_name_and_only_the_fields_set():
    assert repr(PooledModel("robust")) == "PooledModel('robust')"
    assert repr(PooledModel("robust", prior="bda")) == "PooledModel('robust', prior='bda')"
    assert repr(PooledModel("logit_normal", engine="pymc")) == "PooledModel('logit_normal', engine='pymc')"


def test_parts_of_a_name_or_an_object():
    assert model_parts("robust") == ("robust", "default", "exact")
    assert model_parts(PooledModel("logit_normal", prior="bda", engine="pymc")) == ("logit_normal", "bda", "pymc")
    assert PooledModel("robust", prior="bda") == PooledModel("robust", prior="bda") != PooledModel("robust")
