"""What ``rateopt fit --out MODEL`` writes and the other commands read.

* ``MODEL`` (e.g. ``model.npz``): the classifier, rateopt's pickle-free
  ``.npz`` (:func:`rateopt.load`);
* ``<stem>.rateopt.json``: the encoding, the column roles, the goals file's
  text and the run's facts (seed, training time, versions) — JSON;
* ``<stem>.result.npz``: the :class:`~rateopt.TrainResult` (recorded iterates),
  so ``rateopt report`` re-selects a solution without retraining.

The encoding file (version 2) records the SHA-256 of the model file
(``model_sha256``), of the result file (``result_sha256``) and, for a rule
fitted with ``--postprocess MODEL.npz``, of that base model
(``postprocess.model_sha256``). Every reader checks them, so a model beside an
encoding file of another run (a ``fit`` killed between its renames, a base
model retrained in place) is refused with a message naming both files.
Version 1 files (no hashes) are still read, unchecked.
"""

from __future__ import annotations

import hashlib
import json
import math
import os

from .._io import load
from .._threshold_classifier import ThresholdClassifier
from .._training._arity import arity_of_labels
from ..exceptions import RateoptError
from ._encoding import ColumnRoles, Encoding
from ._io import InputError

__all__ = ["SIDECAR_FORMAT", "SIDECAR_VERSION", "ChainedRule", "base_scores", "sidecar_path", "result_path",
           "write_sidecar", "load_input", "read_bundle", "file_sha256", "check_tied", "check_matching"]

SIDECAR_FORMAT = "rateopt-cli-model"
SIDECAR_VERSION = 2
_READABLE_VERSIONS = (1, 2)  # version 1: written before the files were tied by their hashes


def _stem(model_path):
    base, ext = os.path.splitext(os.fspath(model_path))
    return base if ext == ".npz" else os.fspath(model_path)


def sidecar_path(model_path):
    """``model.npz`` -> ``model.rateopt.json``."""
    return _stem(model_path) + ".rateopt.json"


def result_path(model_path):
    """``model.npz`` -> ``model.result.npz``."""
    return _stem(model_path) + ".result.npz"


def write_sidecar(path, info):
    """Write the encoding file ``path`` (a temporary file of :class:`~rateopt._utils._atomic.AtomicFiles`)."""
    meta = {"format": SIDECAR_FORMAT, "version": SIDECAR_VERSION, **info}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def read_sidecar(path):
    try:
        with open(path, encoding="utf-8-sig") as f:  # a byte-order mark (an editor's) is skipped
            meta = json.load(f)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the model's encoding file ({exc.strerror or exc}); it is written "
                         "by rateopt fit next to the model") from None
    except ValueError as exc:
        raise InputError(f"{path}: the model's encoding file is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != SIDECAR_FORMAT:
        raise InputError(f"{path}: not a rateopt model encoding file (format {SIDECAR_FORMAT!r} expected)")
    if type(meta.get("version")) is not int or meta["version"] not in _READABLE_VERSIONS:  # not true for 1
        raise InputError(f"{path}: encoding file version {meta.get('version')!r} (written by rateopt "
                         f"{meta.get('rateopt_version', '?')}); this rateopt reads versions "
                         f"{', '.join(map(str, _READABLE_VERSIONS))}")
    return meta


def file_sha256(path):
    """The SHA-256 of the file at ``path``, as 64 hexadecimal digits."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_tied(meta, field, sidecar, path, what, mismatch=None):
    """Refuse ``path`` unless its SHA-256 is the one the encoding file ``sidecar`` records in ``meta[field]``.

    ``field`` is a key of ``meta`` (or ``("postprocess", "model_sha256")``); a version 1 encoding file records
    no hashes and is not checked. ``what`` names the file's part (``"model"``, ``"result"``, ``"base model"``);
    ``mismatch``, when given, is the message of a mismatch.
    """
    holder, key = (meta, field) if isinstance(field, str) else (meta.get(field[0]) or {}, field[1])
    recorded = holder.get(key)
    if meta.get("version", SIDECAR_VERSION) < 2:
        return
    if not isinstance(recorded, str) or len(recorded) != 64:
        raise InputError(f"{sidecar}: the field {'.'.join([field] if isinstance(field, str) else field)} (the "
                         f"{what} file's SHA-256) is missing or not 64 hexadecimal digits")
    try:
        actual = file_sha256(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the {what} file ({exc.strerror or exc})") from None
    if actual != recorded.lower():
        if mismatch is not None:
            raise InputError(mismatch)
        raise InputError(f"{path} does not match {sidecar}: the {what} file's SHA-256 differs from the one the "
                         f"encoding file records (the two come from different runs of rateopt fit); refit, or put "
                         f"the matching files together")


class ChainedRule:
    """A threshold rule applied to a saved model's scores (``rateopt fit --postprocess MODEL.npz``).

    Parameters
    ----------
    base : classifier
        The scoring model (``decision_function`` when it has one, else ``predict_proba``).
    rule : ThresholdClassifier
        The rule fitted on its scores (``estimator=None``).
    """

    def __init__(self, base, rule):
        self.base, self.rule = base, rule

    def scores(self, X):
        """The base model's scores of the rows."""
        if hasattr(self.base, "decision_function"):
            return self.base.decision_function(X)
        return self.base.predict_proba(X)[:, 1]


def base_scores(model, X):
    """A scoring model's scores: ``decision_function`` when it has one, else the probability of a positive."""
    return ChainedRule(model, None).scores(X)


def _checked_classes(meta, sidecar):
    """The encoding file's ``classes`` field: a list of at least two distinct labels (strings or finite numbers)."""
    classes = meta.get("classes")
    if (not isinstance(classes, list) or len(classes) < 2
            or not all(isinstance(c, (str, int, float)) and (not isinstance(c, float) or math.isfinite(c))
                       for c in classes)):
        raise InputError(f"{sidecar}: the field classes must list at least two class labels (strings or finite "
                         f"numbers), not {_short(classes)}; refit the model with rateopt fit")
    if len(set(classes)) != len(classes):
        raise InputError(f"{sidecar}: the field classes lists one class twice ({_short(classes)}; 1, 1.0 and true are "
                         "one value); refit the model with rateopt fit")
    return classes


def _short(value):
    text = json.dumps(value) if isinstance(value, (list, dict, str, int, float, bool, type(None))) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_matching(clf, meta, enc, sidecar, model_path):
    """Refuse a model beside an encoding file it does not fit: a number of classes, a kind of model (a threshold
    rule of ``fit --postprocess`` or a trained model) or a number of features other than the file records.

    The hashes tie the files of one run; this catches what they cannot: a version 1 encoding file (no hashes),
    or an edited one.
    """
    classes = _checked_classes(meta, sidecar)
    rule = clf.rule if isinstance(clf, ChainedRule) else clf
    is_rule = isinstance(rule, ThresholdClassifier)
    post = meta.get("postprocess")
    if is_rule != (post is not None):
        raise InputError(f"{model_path} does not match {sidecar}: the model file holds "
                         f"{'a threshold rule' if is_rule else 'a trained model'}, but the field postprocess says "
                         f"{'a trained model (it is absent)' if post is None else 'a threshold rule'}; put the "
                         "matching files together, or refit")
    model_classes = list(getattr(rule, "classes_", ()))
    if len(model_classes) != len(classes):
        raise InputError(f"{model_path} does not match {sidecar}: the model has {len(model_classes)} classes, the "
                         f"field classes lists {len(classes)} ({_short(classes)}); put the matching files together, "
                         "or refit")
    if arity_of_labels(classes).model_classes_differ(model_classes, classes):
        raise InputError(f"{model_path} does not match {sidecar}: the model's classes "
                         f"{_short([str(c) for c in model_classes])} differ from the field classes {_short(classes)}; "
                         "put the matching files together, or refit")
    scorer = clf.base if isinstance(clf, ChainedRule) else None if is_rule else clf
    width = 1 if scorer is None else getattr(scorer, "n_features_in_", None)
    if width is not None and int(width) != enc.n_features:
        raise InputError(f"{model_path} does not match {sidecar}: the model reads {int(width)} feature(s), the "
                         f"field encoding makes {enc.n_features}; put the matching files together, or refit")


def load_input(path, missing):
    """``rateopt.load(path)`` for the command line: a missing file (message ``missing``) or a file it refuses is
    an :class:`InputError`."""
    if not os.path.isfile(path):
        raise InputError(missing)
    try:
        return load(path)
    except RateoptError as exc:
        raise InputError(str(exc)) from None


def read_bundle(model_path):
    """``(classifier, meta, encoding, roles)`` of a model written by ``rateopt fit``."""
    model_path = os.fspath(model_path)
    clf = load_input(model_path, f"{model_path}: no such model file")
    if not hasattr(clf, "predict_proba") or type(clf).__name__ == "TrainResult":
        raise InputError(f"{model_path}: a training result, not a classifier; give the model file written by "
                         "rateopt fit --out (or use rateopt report for results)")
    path = sidecar_path(model_path)
    meta = read_sidecar(path)
    for field in ("postprocess", "roles", "report"):  # objects when present
        if meta.get(field) is not None and not isinstance(meta[field], dict):
            raise InputError(f"{path}: the field {field} must be a JSON object, not {_short(meta[field])}")
    check_tied(meta, "model_sha256", path, model_path, "model")
    base = (meta.get("postprocess") or {}).get("model")
    if base is not None and (not isinstance(base, str) or not base):
        raise InputError(f"{path}: the field postprocess.model must be the base model's path, not {_short(base)}")
    if base is not None:  # a threshold rule on another model's scores: that model scores the rows
        base_path = base if os.path.isabs(base) else os.path.join(os.path.dirname(os.path.abspath(model_path)), base)
        if not os.path.isfile(base_path):
            raise InputError(f"{model_path}: the threshold rule post-processes the model {base_path}, which is missing")
        check_tied(meta, ("postprocess", "model_sha256"), path, base_path, "base model",
                   f"{model_path}: the threshold rule was fitted on the scores of {base_path}, which has changed "
                   f"since (its SHA-256 differs from the one {path} records); refit the rule with rateopt fit "
                   f"--postprocess {base}")
        clf = ChainedRule(load_input(base_path, f"{base_path}: no such model file"), clf)
    enc = Encoding.from_json(meta.get("encoding"), path)
    check_matching(clf, meta, enc, path, model_path)
    r = meta.get("roles") or {}
    for field in ("label", "weight", "baseline"):
        if r.get(field) is not None and not isinstance(r[field], str):
            raise InputError(f"{path}: the field roles.{field} must be a column name, not {_short(r[field])}")
    for field in ("groups", "drop"):
        if r.get(field) is not None and not (isinstance(r[field], list) and all(isinstance(c, str) for c in r[field])):
            raise InputError(f"{path}: the field roles.{field} must be a list of column names, not {_short(r[field])}")
    roles = ColumnRoles(label=r.get("label"), groups=tuple(r.get("groups") or ()), weight=r.get("weight"),
                        baseline=r.get("baseline"), drop=tuple(r.get("drop") or ()))
    return clf, meta, enc, roles
