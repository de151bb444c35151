"""Atomic output: a target appears complete or not at all; an existing target survives a failed write."""

import os
import stat

import pytest
from rateopt._utils._atomic import AtomicFiles, atomic_path, check_writable
from rateopt.exceptions import RateoptError


def test_atomic_path_renames_on_success_with_a_new_files_mode(tmp_path):
    target = tmp_path / "out.csv"
    old = os.umask(0o027)
    try:
        with atomic_path(target) as tmp:
            assert os.path.dirname(tmp) == str(tmp_path) and tmp.endswith(".csv") and not target.exists()
            with open(tmp, "w") as f:
                f.write("a,b\n1,2\n")
    finally:
        os.umask(old)
    assert target.read_text() == "a,b\n1,2\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # 0o666 less the umask, as open() would give
    assert os.listdir(tmp_path) == ["out.csv"]


def test_a_failed_write_leaves_the_existing_file_and_no_temporary(tmp_path):
    target = tmp_path / "scores.csv"
    target.write_text("id,score\n1,0.5\n")
    target.chmod(0o600)
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        with open(tmp, "w") as f:
            f.write("id,score\n")
        raise KeyboardInterrupt
    assert target.read_text() == "id,score\n1,0.5\n"
    assert os.listdir(tmp_path) == ["scores.csv"]
    with atomic_path(target) as tmp, open(tmp, "w") as f:
        f.write("new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o600  # its mode is kept


def test_atomic_files_all_or_none(tmp_path):
    with pytest.raises(OSError, match="disk full"), AtomicFiles() as files:
        for name in ("m.npz", "m.rateopt.json"):
            with open(files.path(tmp_path / name), "w") as f:
                f.write(name)
        raise OSError("disk full")
    assert os.listdir(tmp_path) == []
    with AtomicFiles() as files:
        for name in ("m.npz", "m.rateopt.json"):
            with open(files.path(tmp_path / name), "w") as f:
                f.write(name)
    assert sorted(os.listdir(tmp_path)) == ["m.npz", "m.rateopt.json"]
    assert (tmp_path / "m.npz").read_text() == "m.npz"


def test_a_missing_directory_is_named_by_the_target(tmp_path):
    target = tmp_path / "nowhere" / "m.npz"
    message = f"^\\[Errno 2\\] cannot write {target}: No such file or directory$"
    with pytest.raises(FileNotFoundError, match=message), atomic_path(target):
        pass


def test_check_writable_names_the_flag_and_the_problem(tmp_path):
    check_writable(tmp_path / "new.csv", "--out")  # a new file in an existing directory
    with pytest.raises(RateoptError, match=r"^--out .*nowhere/p\.csv: the directory .*nowhere does not exist$"):
        check_writable(tmp_path / "nowhere" / "p.csv", "--out")
    with pytest.raises(RateoptError, match=r"^--report .*: is a directory; give a file name$"):
        check_writable(tmp_path, "--report")
