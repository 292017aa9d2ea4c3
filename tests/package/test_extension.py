"""The extension as users get it: wheels fetched, split per platform and validated by Blender's
tool, installed as Blender does, run."""

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from tools.build_extension import build
from tools.package import fetch

HERE = Path(__file__).parent


def test_split_platform_zips_install_enable_and_simulate(tmp_path):
    wheels = fetch(tmp_path / "wheels", ["linux-x64"], pure_only=True)  # torch and scipy are here already
    assert any(w.name.startswith("torchdiffeq-") for w in wheels)
    zips = build(tmp_path / "dist", wheels, ["linux-x64", "windows-x64"])  # raises if Blender's validator rejects one
    assert [z.name for z in zips] == ["neurok-0.1.0-linux_x64.zip", "neurok-0.1.0-windows_x64.zip"]
    archive = zipfile.ZipFile(zips[0])
    names = set(archive.namelist())
    assert {"blender_manifest.toml", "__init__.py", "core/dynamics.py", "operators/simulate.py", "weights/neurok.pt"} <= names
    assert {f"wheels/{w.name}" for w in wheels} <= names
    assert not any(n.startswith(("tests/", "tools/", "benchmarks/")) or "__pycache__" in n for n in names)
    manifest = tomllib.loads(archive.read("blender_manifest.toml").decode())
    assert manifest["build"]["generated"]["platforms"] == ["linux-x64"] and len(manifest["wheels"]) == len(wheels)

    run = subprocess.run([sys.executable, str(HERE / "install_and_run.py"), str(zips[0])],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["install"] == ["FINISHED"]
    assert report["enabled"]
    assert "/extensions/user_default/neurok/" in report["module_file"].replace("\\", "/")
    assert {"simulate", "clear", "export"} <= set(report["operators"])
    assert report["simulate"] == ["FINISHED"]
    assert report["keys"] == 1 + 5
    assert report["threads"] == 0  # the preferences are registered with their defaults
    assert "/extensions/.user/user_default/neurok/cache" in report["cache_folder"].replace("\\", "/")
    assert "own.pt" in report["weights_override"]  # the preference's weights were the ones looked for
