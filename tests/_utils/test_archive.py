"""The archive container of saved files (``rateopt._utils._archive``): what it refuses before reading."""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest
from rateopt._utils._archive import META_KEY, read_archive, write_archive
from rateopt.exceptions import RateoptError


def _npy(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _meta(**extra):
    return _npy(np.frombuffer(json.dumps({"format": "x", "version": 1, **extra}).encode(), dtype=np.uint8))


def _accept_all(name):
    return True


def test_write_then_read_round_trips_every_array(tmp_path):
    path = tmp_path / "a.npz"
    arrays = {"w": np.arange(6.0).reshape(2, 3), "i": np.array([1, 2], np.int64), "f": np.asfortranarray(
        np.arange(6.0).reshape(2, 3))}
    write_archive(path, {"k": 1}, arrays, "fmt")
    meta, back = read_archive(path, _accept_all)
    assert meta == {"k": 1, "format": "fmt", "version": 1}
    assert sorted(back) == ["f", "i", "w"]
    for k, a in arrays.items():
        np.testing.assert_array_equal(back[k], a)
        assert back[k].dtype == a.dtype
    assert os.listdir(tmp_path) == ["a.npz"]


def test_a_failed_write_leaves_the_previous_file_and_no_partial_file(tmp_path):
    path = tmp_path / "a.npz"
    write_archive(path, {}, {"w": np.ones(3)}, "fmt")
    before = path.read_bytes()
    with pytest.raises(RateoptError, match="'bad'.*dtype object"):
        write_archive(path, {}, {"w": np.zeros(3), "bad": np.array([{}], dtype=object)}, "fmt")
    with pytest.raises(TypeError):  # metadata that is not JSON
        write_archive(path, {"x": object()}, {"w": np.zeros(3)}, "fmt")
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["a.npz"]


def test_a_member_present_twice_is_refused(tmp_path):
    path = tmp_path / "dup.npz"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(META_KEY + ".npy", _meta())
        zf.writestr("weights.npy", _npy(np.ones((1, 2))))
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("weights.npy", _npy(np.full((1, 2), 5.0)))
    with pytest.raises(RateoptError, match=r"dup\.npz.*'weights\.npy' appears more than once"):
        read_archive(path, _accept_all)


def test_a_zip_bomb_is_refused_from_its_declared_sizes_before_decompressing(tmp_path):
    path = tmp_path / "bomb.npz"
    n = 64 << 20  # 64 MiB of zeros deflate to about 64 KiB
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(META_KEY + ".npy", _meta())
        with zf.open("weights.npy", "w", force_zip64=True) as member:
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                          "shape": (1, n // 8)})
            member.write(header.getvalue())
            chunk = bytes(1 << 20)
            for _ in range(n >> 20):
                member.write(chunk)
    assert os.path.getsize(path) < n // 100
    tracemalloc.start()
    try:
        with pytest.raises(RateoptError, match=r"'weights\.npy' declares \d+ bytes compressed into \d+.*zip bomb"):
            read_archive(path, _accept_all)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20  # nothing near the member's 64 MiB was decompressed


def test_a_compressed_archive_of_a_sane_ratio_still_reads(tmp_path):
    path = tmp_path / "c.npz"
    w = np.random.default_rng(0).normal(size=(50, 40))
    np.savez_compressed(path, **{META_KEY: np.frombuffer(json.dumps({"a": 1}).encode(), np.uint8), "w": w})
    meta, arrays = read_archive(path, _accept_all)
    assert meta == {"a": 1}
    np.testing.assert_array_equal(arrays["w"], w)


def test_an_npy_header_that_disagrees_with_the_member_size_is_refused(tmp_path):
    path = tmp_path / "h.npz"
    good = _npy(np.ones(4))
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(META_KEY + ".npy", _meta())
        zf.writestr("w.npy", good.replace(b"(4,)", b"(5,)"))
    with pytest.raises(RateoptError, match=r"'w\.npy' declares an array of shape \(5,\) \(40 bytes\) but holds 32"):
        read_archive(path, _accept_all)
