"""Batch work: ``python -m neurok_blender simulate`` on files and folders, through real bpy."""

import json
import struct
import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from neurok_blender import cli
from neurok_blender.scene_io import read_conditions
from conftest import add_box

ROOT = Path(__file__).parents[2]


def write_box(path: Path, location=(0.0, 0.0, 2.0)):
    add_box(location=location)
    bpy.ops.wm.obj_export(filepath=str(path), export_selected_objects=True, export_materials=False)
    bpy.ops.wm.read_factory_settings(use_empty=True)


def morph_targets(path: Path) -> int:
    data = path.read_bytes()
    length = struct.unpack("<I", data[12:16])[0]
    return len(json.loads(data[20:20 + length])["meshes"][0]["primitives"][0]["targets"])


def test_an_obj_simulates_into_a_gltf(tmp_path, capsys):
    write_box(tmp_path / "box.obj")
    out = tmp_path / "out" / "box.glb"
    assert cli.main(["simulate", str(tmp_path / "box.obj"), "--out", str(out), "--frames", "8",
                     "--category", "rigid", "--velocity", "1", "0", "0"]) == 0
    assert morph_targets(out) == 8
    assert "1 of 1 simulated" in capsys.readouterr().out


def test_a_blend_keeps_its_settings_and_the_command_line_overrides_some(tmp_path):
    add_box(location=(0.0, 0.0, 2.0))
    obj = bpy.context.active_object
    obj.neurok.frame_end, obj.neurok.mass = 30, 3.0
    source = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    out = tmp_path / "baked.blend"
    assert cli.main(["simulate", str(source), "--out", str(out), "--object", "Box", "--frames", "5",
                     "--plasticity", "0.5"]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(out))
    baked = bpy.data.objects["Box"]
    assert baked.neurok.mass == 3.0 and baked.neurok.is_baked
    assert len(baked.data.shape_keys.key_blocks) == 1 + 5
    vertices = np.array([v.co for v in baked.data.vertices])
    conditions = read_conditions(baked, bpy.context.scene, 1, 5, vertices, 1.0, len(vertices))
    assert baked.neurok.plasticity == 0.5 and conditions.plasticity == 0.5  # the override reaches the solver


def test_pin_names_a_vertex_group_and_a_missing_one_is_reported(tmp_path, capsys):
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.vertex_groups.new(name="Hook").add([0], 1.0, "REPLACE")
    source = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    out = tmp_path / "baked.blend"
    assert cli.main(["simulate", str(source), "--out", str(out), "--frames", "12", "--pin", "Hook"]) == 0
    bpy.ops.wm.open_mainfile(filepath=str(out))
    baked = bpy.data.objects["Box"]
    vertices = np.array([v.co for v in baked.data.vertices])
    assert read_conditions(baked, bpy.context.scene, 1, 12, vertices, 1.0, len(vertices)).pins == [0]
    assert cli.main(["simulate", str(source), "--out", str(tmp_path / "other.blend"), "--pin", "Nothing"]) == 1
    assert "Nothing" in capsys.readouterr().out


def test_a_folder_runs_as_a_batch_and_one_bad_file_never_stops_it(tmp_path, capsys):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    write_box(inputs / "a.obj")
    write_box(inputs / "c.obj", location=(0.0, 0.0, 5.0))
    (inputs / "b.obj").write_text("this is not a mesh\n")
    (inputs / "notes.txt").write_text("ignored")
    out = tmp_path / "out"
    assert cli.main(["simulate", str(inputs), "--out", str(out), "--format", "abc", "--frames", "4",
                     "--category", "rigid"]) == 1
    assert sorted(p.name for p in out.iterdir()) == ["a.abc", "c.abc"]
    printed = capsys.readouterr().out
    assert "2 of 3 simulated" in printed and "b.obj: ValueError: the file has 0 meshes" in printed


def batch_inputs(folder: Path) -> Path:
    folder.mkdir()
    for index in range(3):
        write_box(folder / f"box{index}.obj", location=(0.0, 0.0, 1.0 + index))
    (folder / "bad.obj").write_text("this is not a mesh\n")
    return folder


def test_local_workers_give_the_same_outputs_and_a_rerun_skips_what_is_written(tmp_path, capsys):
    inputs = batch_inputs(tmp_path / "inputs")
    common = ["--format", "glb", "--frames", "4", "--category", "rigid", "--velocity", "1", "0", "0"]
    assert cli.main(["simulate", str(inputs), "--out", str(tmp_path / "serial"), *common]) == 1
    assert cli.main(["simulate", str(inputs), "--out", str(tmp_path / "two"), "--workers", "2", *common]) == 1
    printed = capsys.readouterr().out
    assert "4 files on 2 local processes" in printed and printed.count("3 of 4 simulated") == 2
    assert "bad.obj: ValueError: the file has 0 meshes" in printed
    names = ["box0.glb", "box1.glb", "box2.glb"]
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == names  # nothing half-written left beside
    for name in names:
        assert (tmp_path / "serial" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()

    stamp = (tmp_path / "two" / "box0.glb").stat().st_mtime_ns
    assert cli.main(["simulate", str(inputs), "--out", str(tmp_path / "two"), "--workers", "2", *common]) == 1
    assert (tmp_path / "two" / "box0.glb").stat().st_mtime_ns == stamp
    printed = capsys.readouterr().out
    assert "3 of 4 outputs already written, skipped" in printed and "0 of 1 simulated" in printed
    (inputs / "bad.obj").unlink()
    assert cli.main(["simulate", str(inputs), "--out", str(tmp_path / "two"), "--overwrite", *common]) == 0
    assert (tmp_path / "two" / "box0.glb").stat().st_mtime_ns != stamp
    assert "3 of 3 simulated" in capsys.readouterr().out


def test_a_worker_carries_a_large_bakes_estimate_back_in_its_outcome(tmp_path, monkeypatch, capsys):
    """Ray shows nothing its workers print: what a bake tells comes back with the file's outcome."""
    from neurok_blender import estimate

    monkeypatch.setattr(estimate, "LARGE_SECONDS", 1.0)
    write_box(tmp_path / "box.obj")
    job = (tmp_path / "box.obj", tmp_path / "box.glb")
    args = cli.parser().parse_args(["simulate", str(job[0]), "--out", str(job[1]), "--frames", "3", "--category", "rigid"])
    summary, seconds, told = cli.simulate_job(job, args, verbose=False)
    assert len(told) == 1 and "a large bake of 'Box'" in told[0] and seconds > 0 and "baked 3 frames" in summary
    assert "large bake" not in capsys.readouterr().out


def test_a_batch_runs_on_ray_and_reports_the_bad_file(tmp_path, capsys):
    pytest.importorskip("ray")
    inputs = batch_inputs(tmp_path / "inputs")
    common = ["--format", "abc", "--frames", "4", "--category", "rigid"]
    assert cli.main(["simulate", str(inputs), "--out", str(tmp_path / "ray"), "--ray", *common]) == 1
    printed = capsys.readouterr().out
    assert "4 files on Ray on this machine" in printed and "3 of 4 simulated" in printed
    assert "bad.obj: ValueError: the file has 0 meshes" in printed
    assert sorted(p.name for p in (tmp_path / "ray").iterdir()) == ["box0.abc", "box1.abc", "box2.abc"]


def test_bad_arguments_exit_with_a_message(tmp_path):
    write_box(tmp_path / "box.obj")
    with pytest.raises(SystemExit, match="cannot write .fbx"):
        cli.main(["simulate", str(tmp_path / "box.obj"), "--out", str(tmp_path / "box.fbx")])
    with pytest.raises(SystemExit, match="does not exist"):
        cli.main(["simulate", str(tmp_path / "gone.obj"), "--out", str(tmp_path / "x.glb")])
    with pytest.raises(SystemExit, match="needs a folder"):
        cli.main(["simulate", str(tmp_path), "--out", str(tmp_path / "x.glb")])
    with pytest.raises(SystemExit, match="--workers must be at least 1"):
        cli.main(["simulate", str(tmp_path), "--out", str(tmp_path / "out"), "--workers", "0"])
    with pytest.raises(SystemExit):  # argparse: not allowed with --ray
        cli.main(["simulate", str(tmp_path), "--out", str(tmp_path / "out"), "--workers", "2", "--ray"])


def test_ray_missing_is_a_message_not_a_traceback(tmp_path, monkeypatch):
    write_box(tmp_path / "box.obj")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    with pytest.raises(SystemExit, match="NeuROK: running on Ray needs the ray package: pip install"):
        cli.main(["simulate", str(tmp_path), "--out", str(tmp_path / "out"), "--ray"])


def test_python_dash_m_runs_the_command_line():
    run = subprocess.run([sys.executable, "-m", "neurok_blender", "simulate", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "--angular-velocity" in run.stdout


def test_the_readme_headless_recipe_simulates_and_renders(tmp_path):
    """The README's ``blender -b scene.blend --python-expr "..." -a``: the expression, then what -a does."""
    line = next(line for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("blender -b scene.blend --python-expr"))
    assert line.endswith('" -a')
    expression = line.split('--python-expr "', 1)[1].rsplit('"', 1)[0]

    cube = add_box(name="Cube", location=(0.0, 0.0, 2.0))
    cube.neurok.frame_end = 3
    bpy.ops.object.camera_add(location=(0.0, -8.0, 2.0), rotation=(1.5708, 0.0, 0.0))
    scene = bpy.context.scene
    scene.camera = bpy.context.active_object
    scene.frame_start, scene.frame_end = 1, 3
    scene.render.engine, scene.cycles.samples = "CYCLES", 1
    scene.render.resolution_x = scene.render.resolution_y = 32
    scene.render.filepath = str(tmp_path / "frames" / "f")
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))  # blender -b scene.blend

    exec(expression)
    bpy.ops.render.render(animation=True)  # -a
    assert bpy.data.objects["Cube"].neurok.is_baked
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["f0001.png", "f0002.png", "f0003.png"]


def test_a_blends_meshes_simulate_together_and_export_into_one_file(tmp_path, capsys):
    """No --object: a .blend's meshes that are no colliders, together; the Collision-modifier table
    holds the box up. --object repeated picks the bodies; a glTF carries every body's morph targets."""
    bpy.ops.mesh.primitive_plane_add(size=3.0, location=(0.0, 0.0, 1.0))
    bpy.context.active_object.name = "Table"
    bpy.context.active_object.modifiers.new("Collision", "COLLISION")
    add_box("Upper", size=0.3, location=(0.0, 0.0, 2.0))
    add_box("Side", size=0.3, location=(2.0, 0.0, 2.0))
    source = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(source))
    out = tmp_path / "baked.blend"
    assert cli.main(["simulate", str(source), "--out", str(out), "--frames", "30"]) == 0
    assert "2 bodies together" in capsys.readouterr().out
    bpy.ops.wm.open_mainfile(filepath=str(out))
    assert bpy.data.objects["Table"].data.shape_keys is None
    upper = bpy.data.objects["Upper"]
    bpy.context.scene.frame_set(30)
    lowest = min((upper.matrix_world @ v.co).z for v in upper.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh().vertices)
    assert abs(lowest - (1.0 + bpy.data.objects["Table"].collision.thickness_outer)) < 5e-3
    glb = tmp_path / "two.glb"
    assert cli.main(["simulate", str(source), "--out", str(glb), "--frames", "6", "--object", "Upper",
                     "--object", "Side"]) == 0
    meshes = json.loads(glb.read_bytes()[20:20 + struct.unpack("<I", glb.read_bytes()[12:16])[0]])["meshes"]
    assert len(meshes) == 2 and all(len(m["primitives"][0]["targets"]) == 6 for m in meshes)
