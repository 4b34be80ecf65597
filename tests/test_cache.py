"""The cache directory: where it is (NTSYM_CACHE_DIR, XDG_CACHE_HOME), what
``python -m ntsym cache info|clear`` says and removes, the tuning files' lock."""

import os
import subprocess
import sys
import types

import filelock  # noqa: F401 - imported with fcntl, before the test below hides it

from ntsym_codegen import cache
from ntsym_codegen.tuning import store as tuning_store
from ntsym.__main__ import main


def test_the_suite_uses_a_cache_of_its_own():
    """conftest points NTSYM_CACHE_DIR away from the user's cache."""
    assert os.environ.get("NTSYM_CACHE_DIR")
    assert cache.cache_dir() != cache.default_cache_dir()


def test_default_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.default_cache_dir() == str(tmp_path / "ntsym")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as XDG says
    assert cache.default_cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "ntsym")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("NTSYM_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == str(tmp_path / "home" / ".cache" / "ntsym")


def _run(args, cache_path):
    env = dict(os.environ, NTSYM_CACHE_DIR=str(cache_path))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "ntsym", *args], env=env, capture_output=True, text=True,
                          cwd=cache_path.parent)


def test_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    where = tmp_path / "c"
    where.mkdir()
    text = "x = 1\n"
    (where / "k_0123.py").write_text(text + "# ntsym-sha256: abc\n")
    (where / "tuning").mkdir()
    (where / "tuning" / "k_1.json").write_text("{}")
    (where / "notes.txt").write_text("not ntsym's")
    (where / "user.py").write_text("print('mine')\n")
    info = _run(["cache", "info"], where)  # the command line itself, once
    assert info.returncode == 0, info.stderr
    assert f"cache directory: {where}" in info.stdout
    assert "generated modules: 1" in info.stdout and "tuning files: 1" in info.stdout
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(where))
    assert main(["cache", "clear"]) == 0
    assert sorted(p.name for p in where.iterdir()) == ["notes.txt", "user.py"]  # only ntsym's entries go
    main(["cache", "info"])
    assert "generated modules: 0" in capsys.readouterr().out


def test_tuning_files_lock_without_fcntl(monkeypatch, tmp_path):
    """The lock is portable: storing works where ``fcntl`` does not exist."""
    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "fcntl", None)
    spec = types.SimpleNamespace(kernel_source="k", name="k")
    tuning_store.store(spec, "key", {"config": 1})
    tuning_store.store(spec, "other", {"config": 2})
    assert tuning_store.load(spec, "key") == {"config": 1} and tuning_store.load(spec, "other") == {"config": 2}


def test_a_module_loaded_by_two_threads_at_once_is_whole_in_both(monkeypatch, tmp_path):
    """A module is in ``sys.modules`` while it runs: a second thread loading
    it then must wait for it to end, not take it half-run (a kernel's first
    calls from several threads found no kernel function in it)."""
    import threading

    monkeypatch.setenv("NTSYM_CACHE_DIR", str(tmp_path))
    source = "import time\ntime.sleep(0.3)\nVALUE = 42\n# ntsym-sha256: x\n"
    started = threading.Event()
    seen = []

    def first():
        started.set()
        seen.append(getattr(cache.load(source, "race_check"), "VALUE", None))

    thread = threading.Thread(target=first)
    thread.start()
    started.wait()
    import time

    time.sleep(0.1)  # the first thread is inside the module's body by now
    seen.append(getattr(cache.load(source, "race_check"), "VALUE", None))
    thread.join()
    assert seen == [42, 42]
