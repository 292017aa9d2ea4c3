"""Build and validate the extension zip with Blender's own extension tool, from the bpy module.

    python -m tools.build_extension [--output-dir dist]

The repository root is not the add-on's root, so the manifest and the ``neurok_blender`` package are
staged into a temporary folder first: the zip then holds exactly the add-on, nothing of training,
tests or benchmarks.
"""

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def isolate_user_folders() -> None:
    """Point Blender's user folders at a temp dir before ``import bpy``, so no installed add-on or
    extension (with its own bundled torch) leaks into this process."""
    if "bpy" in sys.modules:
        raise RuntimeError("isolate_user_folders() must run before bpy is imported")
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="neurok-blender-user-"))


def stage(destination: Path) -> Path:
    shutil.copytree(ROOT / "neurok_blender", destination, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "blender_manifest.toml", destination / "blender_manifest.toml")
    wheels = sorted((ROOT / "wheels").glob("*.whl"))
    if wheels:
        (destination / "wheels").mkdir()
        for wheel in wheels:
            shutil.copy2(wheel, destination / "wheels" / wheel.name)
    return destination


def extension_command(args: list[str]) -> None:
    """``blender --command extension ARGS``, run in-process through the bpy module."""
    if "bpy" not in sys.modules:
        isolate_user_folders()
    import bpy  # noqa: F401  (puts Blender's bundled add-ons, bl_pkg among them, on sys.path)
    import bl_pkg.bl_extension_cli as cli

    status = cli.cli_extension_handler(args)
    if status:
        raise RuntimeError(f"blender extension {' '.join(args[:1])} failed with status {status}")


def build(output_dir: Path) -> Path:
    """Build the zip into ``output_dir``, validate it, and return its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source = stage(Path(tmp) / "neurok")
        extension_command(["build", "--source-dir", str(source), "--output-dir", str(output_dir)])
    (zip_path,) = sorted(output_dir.glob("neurok-*.zip"), key=os.path.getmtime)[-1:]
    extension_command(["validate", str(zip_path)])
    return zip_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=ROOT / "dist")
    print(build(parser.parse_args().output_dir))


if __name__ == "__main__":
    main()
