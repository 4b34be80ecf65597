"""Progress lines (tuning, AOT builds) and ``logging`` on the same stderr:
a log record never runs on from a half-written progress line."""

import logging
import sys

from ntsym_codegen import progress


def test_log_records_start_on_a_line_of_their_own(monkeypatch, capsys):
    monkeypatch.setenv("NTSYM_TUNING_PROGRESS", "1")
    logger = logging.getLogger("ntsym")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)  # setLevel, not the attribute: it clears logging's cache of levels
    try:
        progress.show("ntsym: tuning k: 1/4 configs")
        logger.info("ntsym: something else")
        progress.show("ntsym: tuning k: 2/4 configs")
        progress.end()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    err = capsys.readouterr().err
    lines = err.split("\n")
    assert "INFO:ntsym:ntsym: something else" in lines
    assert err.endswith("\n")
    assert "INFO:ntsym:ntsym: tuning" not in err  # shown as the line, not logged again at INFO


def test_without_the_line_progress_is_logged(monkeypatch, caplog, capsys):
    monkeypatch.setenv("NTSYM_TUNING_PROGRESS", "0")
    with caplog.at_level(logging.INFO, logger="ntsym"):
        progress.show("ntsym: building k: 1/3 variants compiled")
        progress.end()
    assert "ntsym: building k: 1/3 variants compiled" in caplog.text
    assert capsys.readouterr().err == ""


def test_example_timings_say_whose_they_are(capsys):
    import pytest
    import torch

    from examples import _common

    if torch.cuda.is_available():
        pytest.skip("GPU times are the GPU's")
    x = torch.ones(3)
    _common.report("ones", x, x, 0, 0, lambda: None, lambda: None)
    out = capsys.readouterr().out
    assert "ones: matches torch" in out and "Triton's interpreter on the CPU" in out
