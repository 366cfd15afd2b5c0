"""Fixtures of the real-model tests: tiny models built from a config (tests/model/tiny.py)."""

import os

import pytest

transformers = pytest.importorskip("transformers")

from attn_core.lessons import model as M  # noqa: E402

from .tiny import save_bert, save_gpt2  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    return M.load_model("tiny-bert", path=save_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory):
    # an online name, loaded from a folder
    return M.load_model("gpt2", path=save_gpt2(tmp_path_factory.mktemp("tiny-gpt2")))


@pytest.fixture(scope="module", params=["tiny_bert", "tiny_gpt2"])
def tiny(request):
    return request.getfixturevalue(request.param)
