"""Quoted errors: every message a document quotes in an ```error block is raised by the installed library."""

import pytest

from support.docs import markdown_files, matches_quote, quoted_errors
from support.harness import REPO, leg_marks
from support.quoted_errors import load_producers

PRODUCERS = load_producers()  # every producer module imported; composer producers import composer only when called

QUOTES = [pytest.param(error_id, quote, where, id=where, marks=leg_marks(REPO / where.split(":")[0]))
          for path in markdown_files() for error_id, quote, where in quoted_errors(path)]


@pytest.mark.parametrize(("error_id", "quote", "where"), QUOTES)
def test_quoted_error_is_what_the_library_raises(error_id, quote, where, tmp_path):
    assert error_id in PRODUCERS, f"{where}: no producer for error block {error_id!r} in tests/support/quoted_errors_*.py"
    message = PRODUCERS[error_id](tmp_path)
    assert matches_quote(quote, message), f"{where}: quoted\n  {quote}\nbut the library raised\n  {message}"


def test_every_producer_is_quoted():
    quoted_ids = {error_id for path in markdown_files() for error_id, _, _ in quoted_errors(path)}
    assert set(PRODUCERS) <= quoted_ids, f"producers nobody quotes: {sorted(set(PRODUCERS) - quoted_ids)}"


def test_quote_matching_can_fail():
    message = "ValueError: The max_duration (3ba) is less than or equal to the elapsed training duration (3ba)."
    assert matches_quote("ValueError: The max_duration ... elapsed training duration", message)
    assert not matches_quote("ValueError: The max_duration ... is greater than", message)
    assert not matches_quote("elapsed training duration ... The max_duration", message)


def test_quote_matching_keeps_the_line_breaks():
    message = "ImportError: \nTrainer requires PyTorch >= 2.6.\nPlease install it.\n"
    assert matches_quote("ImportError:\nTrainer requires PyTorch >= 2.6.\nPlease install it.", message)
    assert matches_quote("ImportError:\nTrainer requires ...\n...", message)
    assert not matches_quote("ImportError: Trainer requires PyTorch >= 2.6. Please install it.", message)
    assert not matches_quote("ImportError:\nTrainer requires PyTorch\n>= 2.6.", message)
