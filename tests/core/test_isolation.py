import subprocess
import sys


def test_core_and_package_import_without_blender():
    """core/ never imports bpy, and importing the add-on package alone needs no Blender either."""
    code = "import sys; sys.modules['bpy'] = None; import neurok_blender, neurok_blender.core; print('ok')"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
