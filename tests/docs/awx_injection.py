"""What AWX does with a custom credential type when a job or an inventory update starts, for
running docs/awx.md's credential types without an AWX.

AWX's documented rules ("Custom Credential Types" in its administration guide): the *input
configuration* lists ``fields`` (each with ``id``, ``label`` and ``type``) and ``required`` ids;
the *injector configuration* renders Jinja templates over the inputs (by field id) and
``tower.filename``: each ``file`` entry ``template.<name>`` becomes a file readable only by the
job's user in the private data directory, named by ``{{ tower.filename.<name> }}``; ``env``
and ``extra_vars`` are rendered into the job's environment and extra variables. Rendering is
sandboxed and an undefined name is an error, as in AWX.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIELD_TYPES = ("string", "boolean")


@dataclasses.dataclass
class Injected:
    env: dict
    extra_vars: dict
    files: dict  # template name -> path written


def validate_inputs(inputs: dict) -> list:
    """The problems AWX's form would refuse in an input configuration (empty when none)."""
    problems = []
    ids = []
    for index, field in enumerate(inputs.get("fields") or []):
        for key in ("id", "label"):
            if not isinstance(field.get(key), str) or not field.get(key):
                problems.append("fields[%d].%s: required" % (index, key))
        if field.get("type", "string") not in FIELD_TYPES:
            problems.append("fields[%d].type: one of %s" % (index, ", ".join(FIELD_TYPES)))
        ids.append(field.get("id"))
    problems.extend(
        "required: %s is not a field" % name for name in inputs.get("required") or [] if name not in ids
    )
    return problems


def inject(inputs: dict, injectors: dict, values: dict, private_dir: str) -> Injected:
    """Render ``injectors`` with ``values`` (field id -> value) as AWX does before a run."""
    missing = [name for name in inputs.get("required") or [] if not values.get(name)]
    if missing:
        raise ValueError("required inputs missing: %s" % ", ".join(missing))
    render = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    files = {}
    for key, template in (injectors.get("file") or {}).items():
        name = key.split(".", 1)[1] if "." in key else ""
        descriptor, path = tempfile.mkstemp(dir=private_dir, prefix="cred-")  # 0600
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(render.from_string(template).render(values))
        files[name] = path
    namespace = dict(values, tower={"filename": files.get("") or files})

    def rendered(section: str) -> dict:
        return {k: render.from_string(v).render(namespace) for k, v in (injectors.get(section) or {}).items()}

    return Injected(rendered("env"), rendered("extra_vars"), files)
