"""Extract the countries a sentence mentions, as JSON that follows a schema, with mlx-lm.

    python python/examples/country_extract.py [MODEL_DIR] [--sentence TEXT] [--seed N]

MODEL_DIR defaults to the repository's default model converted for MLX
(`cargo xtask convert-model` writes assets/models/gemma-3-270m-f16). The same seed gives the
same text.
"""

import argparse
import json
import os
from pathlib import Path

import mlx.core as mx
from mlx_lm import generate, load
from mlx_lm.sample_utils import make_sampler

from stencil.mlx import JsonSchemaLogitsProcessor

# The seed's schema, bounded so that a small model's answer always ends: no other properties,
# at most five countries, names of at most 60 characters.
SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 60},
            "continent": {"type": "string", "maxLength": 60},
        },
        "required": ["name", "continent"],
        "additionalProperties": False,
    },
    "maxItems": 5,
}

SENTENCE = "Adamma went home to Nigeria for the hols"

DEFAULT_MODEL = (
    Path(os.environ.get("STENCIL_ASSETS") or Path(__file__).resolve().parents[2] / "assets")
    / "models"
    / "gemma-3-270m-f16"
)


def extract(model, tokenizer, sentence: str, seed: int = 42, max_tokens: int = 256) -> str:
    """The model's answer: JSON text that follows SCHEMA."""
    mx.random.seed(seed)
    prompt = (
        f"Which countries are mentioned in the sentence '{sentence}'?\n"
        f"Your answer should be only JSON, according to this schema: {json.dumps(SCHEMA)}"
    )
    messages = [{"role": "user", "content": prompt}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    processor = JsonSchemaLogitsProcessor(SCHEMA, tokenizer)
    return generate(
        model,
        tokenizer,
        prompt,
        max_tokens=max_tokens,
        sampler=make_sampler(temp=0.7),
        logits_processors=[processor],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL))
    parser.add_argument("--sentence", default=SENTENCE)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    model, tokenizer = load(args.model)
    print(extract(model, tokenizer, args.sentence, args.seed))


if __name__ == "__main__":
    main()
