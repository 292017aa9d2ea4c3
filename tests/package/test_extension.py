"""The extension as users get it: built and validated by Blender's tool, installed as Blender does."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from tools.build_extension import build

HERE = Path(__file__).parent


def test_built_zip_installs_enables_and_simulates(tmp_path):
    zip_path = build(tmp_path)  # raises if Blender's validator rejects the manifest or the zip
    names = zipfile.ZipFile(zip_path).namelist()
    assert {"blender_manifest.toml", "__init__.py", "core/dynamics.py", "operators/simulate.py", "weights/neurok.pt"} <= set(names)
    assert not any(n.startswith(("tests/", "tools/", "benchmarks/")) or "__pycache__" in n for n in names)

    run = subprocess.run([sys.executable, str(HERE / "install_and_run.py"), str(zip_path)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["install"] == ["FINISHED"]
    assert report["enabled"]
    assert "/extensions/user_default/neurok/" in report["module_file"].replace("\\", "/")
    assert {"simulate", "clear"} <= set(report["operators"])
    assert report["simulate"] == ["FINISHED"]
    assert report["keys"] == 1 + 5
    assert report["device"] == "auto"
    assert "/extensions/.user/user_default/neurok/cache" in report["cache_folder"].replace("\\", "/")
    assert "own.pt" in report["weights_override"]  # the preference's weights were the ones looked for
