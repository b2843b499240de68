"""Check a result record against its JSON-Schema (result.schema.yaml).

Kept apart from rnnbench.results.load, so that a training job checks its record without
importing pandas and scipy (about 2 s).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Callable

import jsonschema
import yaml

# Beside the package, not in workflow/schemas/: inside an image only workflow/scripts/ is bound.
RESULT_SCHEMA = Path(__file__).with_name("result.schema.yaml")


@lru_cache(maxsize=1)
def _result_validator() -> Callable[[dict], None]:
    """A function that raises jsonschema.ValidationError for a record that fails
    result.schema.yaml. fastjsonschema compiles the schema to Python (about 30 us a record
    against jsonschema's 1.4 ms: aggregating 100,000 results takes seconds, not minutes);
    where it is not installed (the TF 2.12 and 2.16 images, which validate one record per
    job) jsonschema validates. The schema uses nothing beyond draft 7, fastjsonschema's
    newest; tests/results/test_results.py checks that both accept and reject the same records."""
    schema = yaml.safe_load(RESULT_SCHEMA.read_text())
    try:
        import fastjsonschema
    except ImportError:
        return jsonschema.Draft202012Validator(schema).validate
    compiled = fastjsonschema.compile({k: v for k, v in schema.items() if k != "$schema"})

    def validate(result: dict) -> None:
        try:
            compiled(result)
        except fastjsonschema.JsonSchemaException as error:
            raise jsonschema.ValidationError(error.message) from None

    return validate


def validate_result(result: dict) -> None:
    """Check a result record against rnnbench/result.schema.yaml.

    Raises:
        jsonschema.ValidationError: naming the first missing or bad field.
    """
    _result_validator()(result)
