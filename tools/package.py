"""Per-platform extension zips with PyTorch inside: fetch the wheels, then build with Blender's tool.

    python -m tools.package [--platform linux-x64 ...] [--pure-only] [--wheels wheels] [--output-dir dist]

pip downloads, for CPython 3.11 (Blender 4.2 to 5.0), the binary wheels of each platform (torch,
scipy, which torchdiffeq imports, and MarkupSafe) and the pure-Python rest once (torchdiffeq and
torch's runtime dependencies), at the versions installed here, so the zips carry what the tests ran
with. numpy is never bundled: Blender ships its own. The staged manifest lists the wheels and the
platforms, and ``--split-platforms`` writes one zip per platform holding only its wheels; each is
validated. On PyPI the Linux torch wheel is the CUDA build (several GB with its nvidia wheels):
point pip at the CPU build with ``PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu`` (this
machine has it as a local file). ``--pure-only`` skips the binary wheels (the tests use it: the
Python that runs them already has torch and scipy).
"""

import argparse
import importlib.metadata
import subprocess
import sys
from pathlib import Path

from tools.build_extension import ROOT, build

PYTHON = "3.11"
# Blender's platform names -> the pip platform tag of its wheels (pip also accepts older compatible tags)
PLATFORMS = {"linux-x64": "manylinux_2_28_x86_64", "windows-x64": "win_amd64", "macos-arm64": "macosx_14_0_arm64"}
BINARY = ("torch", "scipy", "MarkupSafe")
PURE = ("torchdiffeq", "filelock", "typing_extensions", "sympy", "mpmath", "networkx", "jinja2", "fsspec", "setuptools")


def pinned(names) -> list[str]:
    """``name==version`` at the versions installed here; torch without its local tag (+cpu), which
    pip matches to the CPU build where the index has it."""
    return [f"{n}=={importlib.metadata.version(n).split('+')[0]}" for n in names]


def download(folder: Path, requirements: list[str], platform: str | None = None) -> None:
    target = ["--platform", platform, "--python-version", PYTHON, "--implementation", "cp"] if platform else []
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--dest", str(folder), *target, *requirements], check=True)


def fetch(folder: Path, platforms: list[str], pure_only: bool = False) -> list[Path]:
    """Download the wheels into ``folder``; returns them (pip skips files it already has)."""
    folder.mkdir(parents=True, exist_ok=True)
    download(folder, pinned(PURE))
    if not pure_only:
        for platform in platforms:
            download(folder, pinned(BINARY), PLATFORMS[platform])
    wheels = sorted(folder.glob("*.whl"))
    if any(w.name.startswith("numpy-") for w in wheels):
        raise RuntimeError(f"{folder} holds a numpy wheel: Blender ships numpy, remove it")
    return wheels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", action="append", choices=list(PLATFORMS),
                        help="repeat for several; default all of them")
    parser.add_argument("--pure-only", action="store_true", help="only the pure-Python wheels")
    parser.add_argument("--wheels", type=Path, default=ROOT / "wheels")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "dist")
    args = parser.parse_args()
    platforms = args.platform or list(PLATFORMS)
    for zip_path in build(args.output_dir, fetch(args.wheels, platforms, args.pure_only), platforms):
        print(f"{zip_path} ({zip_path.stat().st_size / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
