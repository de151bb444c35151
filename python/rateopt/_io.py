"""``rateopt.load``: one reader per saved format, chosen by the file's metadata.

Every file rateopt saves is one archive of :mod:`rateopt._utils._archive`
(arrays plus JSON metadata, no pickle). Its metadata names the format and,
for a training result, the kind of result; :data:`READERS` maps each to the
function that validates the fields and builds the object. The modules that
define the saved types know nothing of one another: a new saved type is one
reader and one line of the table.
"""

from __future__ import annotations

import os
import re

from ._methods._ramp_result import RAMP_RESULT_KIND, ramp_result_from_file
from ._predictors._boosted_mixture import BOOSTED_FORMAT, THRESHOLDED_KIND, boosted_mixture_from_file
from ._predictors._linear import FORMAT_NAME, classifier_from_file
from ._predictors._multiclass import MULTICLASS_FORMAT, multiclass_classifier_from_file
from ._solutions._result import RESULT_FORMAT, result_from_file
from ._solutions._result_file import result_fields_from_file
from ._postprocess._class_mixture import CLASS_MIXTURE_FORMAT, class_thresholded_mixture_from_file
from ._postprocess._mixture import MIXTURE_FORMAT, boosted_thresholded_mixture_from_file, \
    thresholded_mixture_from_file
from ._threshold_classifier import THRESHOLD_FORMAT, threshold_classifier_from_file
from ._utils._archive import FORMAT_VERSION, read_archive
from .exceptions import RateoptError

__all__ = ["load", "READERS"]


def _ramp_result(meta, arrays, path):
    return ramp_result_from_file(result_fields_from_file(meta, arrays, path), meta, arrays, path)


#: ``(format name, kind or None) -> reader(meta, arrays, path)``; ``None`` is any other kind. A reader gets the
#: file's metadata (dict), its array members by name and its path (named in errors); it checks every field it
#: reads and raises a one-line :class:`~rateopt.exceptions.RateoptError` naming the file and the field.
READERS = {
    (FORMAT_NAME, None): classifier_from_file,
    (MULTICLASS_FORMAT, None): multiclass_classifier_from_file,
    (RESULT_FORMAT, None): result_from_file,
    (RESULT_FORMAT, RAMP_RESULT_KIND): _ramp_result,  # Goh et al. (2016)'s MM iterates carry their ramp records too
    (THRESHOLD_FORMAT, None): threshold_classifier_from_file,
    (MIXTURE_FORMAT, None): thresholded_mixture_from_file,
    (CLASS_MIXTURE_FORMAT, None): class_thresholded_mixture_from_file,
    (BOOSTED_FORMAT, None): boosted_mixture_from_file,
    (BOOSTED_FORMAT, THRESHOLDED_KIND): boosted_thresholded_mixture_from_file,
}

#: The array members a reader may use; any other member of an archive is ignored.
_ARRAYS = frozenset((
    "weights", "biases", "probabilities", "landmarks", "whitening", "iterations", "multipliers", "offsets",
    "atom_rates", "c0", "C", "kappa", "val_atom_rates", "val_c0", "val_C", "val_kappa", "Z", "z0",
    "val_Z", "val_z0", "ramp_atom_rates", "regularizers", "rule_start", "rule_edges", "rule_table", "support",
    "plugin_costs", "plugin_probabilities", "booster", "prefix_lengths", "objective_cells",
    "objective_label_weights", "val_objective_cells", "val_objective_label_weights", "rule_probabilities",
    "rule_offsets", "rule_costs"))
#: The compiled rows of metric constraint j (and of its validation copy): ``[val_]mc<j>_Z`` / ``_z0``.
_METRIC_ARRAY = re.compile(r"(val_)?mc[0-9]{1,6}_(Z|z0)")


def _known_array(name):
    return name in _ARRAYS or _METRIC_ARRAY.fullmatch(name) is not None


def load(path):
    """Load a classifier or a training result saved with ``save``.

    The file is a NumPy ``.npz`` archive holding the arrays ``weights``,
    ``biases``, ``probabilities`` and a JSON metadata entry with the format
    name ``"rateopt-model"``, its version, the classifier kind and the number of
    features; a kernel model adds the arrays ``landmarks`` and ``whitening``
    and its kernel's parameters. A :class:`~rateopt.TrainResult` is saved
    under the format name ``"rateopt-train-result"`` with the recorded
    iterates, multipliers, atom rates and the problem's rate maps (``c0``,
    ``C``, ``kappa``; ``val_*`` for validation). Nothing is unpickled, and
    every field is validated before an object is built.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npz`` file written by ``save``.

    Returns
    -------
    LinearClassifier or StochasticClassifier or RampClassifier or BoostedMixture or TrainResult or RampMMResult
        The classifier, with its kernel feature map for a kernel model, or the
        training result. A :class:`~rateopt.BoostedMixture` needs its backend
        (``rateopt[boosting]``) to load.

    Raises
    ------
    rateopt.exceptions.RateoptError
        If the file cannot be read, is not a rateopt model (e.g. a ``.npy``
        file, a text file, an empty file), is damaged (truncated, a corrupt
        or encrypted zip archive, missing members), has an unsupported format
        version, or any field is invalid (the message names the field).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or an os.PathLike, got {type(path).__name__}")
    meta, arrays = read_archive(path, _known_array)
    path = os.fspath(path)
    formats = {fmt for fmt, _ in READERS}
    if not isinstance(meta, dict) or meta.get("format") not in formats:
        raise RateoptError(f"{path!r} is not a rateopt model file")
    if meta.get("version") != FORMAT_VERSION:
        raise RateoptError(f"{path!r} has format version {meta.get('version')!r}; this rateopt reads {FORMAT_VERSION}")
    reader = READERS.get((meta["format"], meta.get("kind"))) or READERS[(meta["format"], None)]
    return reader(meta, arrays, path)
