"""Write docs/api.md, the reference of the public Python API, from the docstrings and signatures.

    python -m tools.api_reference           # rewrite docs/api.md
    python -m tools.api_reference --check   # exit 1 if docs/api.md is out of step (a test runs this)

The public API is ``neurok_blender.api`` (the add-on's plain functions, inside Blender) and the names
in ``neurok_blender.core.__all__`` (the solver, anywhere). Importing ``neurok_blender.api`` needs bpy.
"""

import argparse
import dataclasses
import inspect
import sys
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "api.md"
API_FUNCTIONS = ("simulate_object", "estimate_object", "clear_object", "export_object")


def reference() -> str:
    import neurok_blender.api as api
    import neurok_blender.core as core

    lines = ["# Python API reference", "",
             "Generated from the docstrings by `python -m tools.api_reference`; a test keeps it in step.", "",
             "## `neurok_blender.api`: the add-on's plain functions (inside Blender)", "",
             _docstring(api), ""]
    for name in API_FUNCTIONS:
        lines += _entry(name, getattr(api, name), level=3)
    lines += ["## `neurok_blender.core`: the solver (torch and numpy, no Blender)", "", _docstring(core), ""]
    for name in core.__all__:
        lines += _entry(name, getattr(core, name), level=3)
    return "\n".join(lines).rstrip() + "\n"


def _entry(name: str, value, level: int) -> list[str]:
    heading = "#" * level
    if inspect.isclass(value):
        lines = [f"{heading} class `{name}{_signature(value)}`", "", _docstring(value), ""]
        if dataclasses.is_dataclass(value):
            lines += [f"- `{field.name}: {_annotation(field.type)}`" for field in dataclasses.fields(value)] + [""]
        for member, function in vars(value).items():
            if isinstance(function, (classmethod, staticmethod)):
                function = function.__func__
            if member.startswith("_") or not inspect.isfunction(function) or not function.__doc__:
                continue
            lines += [f"{heading}# `{name}.{member}{_signature(function)}`", "", _docstring(function), ""]
        return lines
    if callable(value):
        return [f"{heading} `{name}{_signature(value)}`", "", _docstring(value), ""]
    if isinstance(value, dict):
        return [f"{heading} `{name}`", ""] + [f"- `{key!r}`: {text}" for key, text in value.items()] + [""]
    return [f"{heading} `{name}`", "", "```python", f"{name} = {value!r}", "```", ""]


def _signature(value) -> str:
    try:
        return str(inspect.signature(value))
    except (TypeError, ValueError):
        return "()"


def _annotation(annotation) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _docstring(value) -> str:
    """The docstring as Markdown: its indented blocks (equations, examples) as code. A module's prose
    starts at the margin, so its docstring is taken as written; a function's or class's is dedented."""
    text = (value.__doc__ or "").strip("\n") if inspect.ismodule(value) else inspect.getdoc(value) or ""
    out, code = [], False
    for line in text.splitlines():
        indented = line.startswith("    ")
        if indented and not code:
            out.append("```")
            code = True
        elif not indented and line.strip() and code:
            out.append("```")
            code = False
        out.append(line[4:] if code and indented else line)
    while out and not out[-1].strip():
        out.pop()
    if code:
        out.append("```")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/api.md instead of writing it")
    args = parser.parse_args()
    from tools.build_extension import isolate_user_folders

    isolate_user_folders()
    text = reference()
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is out of step with the docstrings: run python -m tools.api_reference", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
