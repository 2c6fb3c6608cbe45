"""Shared fixtures: the repository's assets (`cargo xtask fetch-assets`) and test data."""

import json
import os
from pathlib import Path

import pytest

import stencil

REPO = Path(__file__).resolve().parents[2]


def assets_dir() -> Path:
    """`$STENCIL_ASSETS`, else `assets/` in the repository (as xtask and the Rust tests use)."""
    return Path(os.environ.get("STENCIL_ASSETS") or REPO / "assets")


def shared_data_dir() -> Path:
    """`$STENCIL_SHARED_DATA`, else `shared/data` beside the repository."""
    return Path(os.environ.get("STENCIL_SHARED_DATA") or REPO.parent / "shared" / "data")


def tokenizer_path(name: str) -> Path:
    path = assets_dir() / "tokenizers" / name / "tokenizer.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `cargo xtask fetch-assets` (or set STENCIL_ASSETS)")
    return path


def model_path(name: str) -> Path:
    path = assets_dir() / "models" / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `cargo xtask fetch-assets` (or set STENCIL_ASSETS)")
    return path


@pytest.fixture(scope="session")
def llama3_vocab() -> stencil.Vocab:
    return stencil.Vocab.from_tokenizer_json(tokenizer_path("llama3"))


# The seed's schema: the countries a sentence mentions.
COUNTRIES = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
        "required": ["name", "continent"],
    },
}


def load_bench_schemas(per_split: int):
    """Up to `per_split` schemas of each split of the JSONSchemaBench sample, or [] when the
    sample is not beside the repository."""
    root = shared_data_dir() / "jsonschemabench-sample"
    if not root.is_dir():
        return []
    out = []
    for split in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(split.glob("*.json"))[:per_split]:
            out.append((f"{split.name}/{f.name}", json.loads(f.read_text())["schema"]))
    return out
