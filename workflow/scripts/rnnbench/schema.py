"""The result record's JSON-Schema (result.schema.yaml), kept apart from rnnbench.results so
that a training job checks its record without importing pandas and scipy (about 2 s)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

# Beside the package, not in workflow/schemas/: inside an image only workflow/scripts/ is bound.
RESULT_SCHEMA = Path(__file__).with_name("result.schema.yaml")


@lru_cache(maxsize=1)
def _result_validator() -> jsonschema.protocols.Validator:
    schema = yaml.safe_load(RESULT_SCHEMA.read_text())
    return jsonschema.Draft202012Validator(schema)


def validate_result(result: dict) -> None:
    """Check a result record against rnnbench/result.schema.yaml.

    Raises:
        jsonschema.ValidationError: naming the first missing or bad field.
    """
    _result_validator().validate(result)
