"""Build and validate the extension zip with Blender's own extension tool, from the bpy module.

    python -m tools.build_extension [--output-dir dist]

The repository root is not the add-on's root, so the manifest and the ``neurok_blender`` package are
staged into a temporary folder first: the zip then holds exactly the add-on, nothing of training,
tests or benchmarks.
"""

import argparse
import atexit
import os
import shutil
import sys
import json
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def isolate_user_folders() -> None:
    """Point Blender's user folders at a temp dir before ``import bpy``, so no installed add-on or
    extension (with its own bundled torch) leaks into this process."""
    if "bpy" in sys.modules:
        raise RuntimeError("isolate_user_folders() must run before bpy is imported")
    if "BLENDER_USER_RESOURCES" not in os.environ:  # a parent's folder serves its child processes too
        folder = tempfile.mkdtemp(prefix="neurok-blender-user-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        os.environ["BLENDER_USER_RESOURCES"] = folder


def stage(destination: Path, wheels: list[Path] = (), platforms: list[str] = ()) -> Path:
    """The add-on folder as Blender's tool wants it; ``wheels`` and ``platforms`` go into its manifest
    (top-level keys, so before the first table)."""
    shutil.copytree(ROOT / "neurok_blender", destination, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = (ROOT / "blender_manifest.toml").read_text()
    extra = ""
    if platforms:
        extra += f"platforms = {json.dumps(list(platforms))}\n"
    if wheels:
        (destination / "wheels").mkdir()
        for wheel in wheels:
            shutil.copy2(wheel, destination / "wheels" / wheel.name)
        extra += f"wheels = {json.dumps(['./wheels/' + w.name for w in wheels])}\n"  # JSON strings are TOML strings
    table = manifest.index("\n[") + 1
    (destination / "blender_manifest.toml").write_text(manifest[:table] + extra + "\n" + manifest[table:])
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


def build(output_dir: Path, wheels: list[Path] = (), platforms: list[str] = ()) -> list[Path]:
    """Build into ``output_dir`` and validate: one zip, or with ``platforms`` one per platform
    holding only its wheels (Blender's ``--split-platforms``). Returns the zips' paths."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        source, built = stage(Path(tmp) / "neurok", wheels, platforms), Path(tmp) / "built"
        split = ["--split-platforms"] if platforms else []
        built.mkdir()
        extension_command(["build", "--source-dir", str(source), "--output-dir", str(built), *split])
        zips = [Path(shutil.move(z, output_dir / z.name)) for z in sorted(built.glob("*.zip"))]
    for zip_path in zips:
        extension_command(["validate", str(zip_path)])
    return zips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=ROOT / "dist")
    for zip_path in build(parser.parse_args().output_dir):
        print(zip_path)


if __name__ == "__main__":
    main()
