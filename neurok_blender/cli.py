"""Batch work from a shell, through the bpy module (``pip install bpy``) or Blender's own Python:

    python -m neurok_blender simulate INPUT --out OUTPUT [--object NAME ...] [conditions...]
                                      [--workers N | --ray [ADDRESS]] [--overwrite]

INPUT is a .blend, .glb, .gltf or .obj file, or a folder of them; OUTPUT a .blend, .glb, .gltf or
.abc file, or for a folder a folder (``--format`` picks the files' type). Settings given on the
command line override the object's own (a .blend keeps what the artist set for the rest). One bad
file never stops a batch: each is reported, and a summary lists what failed and why. A folder's
files run one after another here, or at once in ``--workers`` processes or as Ray tasks
(``neurok_blender.executors``); a rerun skips the outputs already written, and no output is ever
left half-written.
"""

import argparse
import dataclasses
import functools
import os
import shutil
import time
from pathlib import Path

from .executors import Executor, Failed, run_all

INPUTS = (".blend", ".glb", ".gltf", ".obj")
OUTPUTS = (".blend", ".glb", ".gltf", ".abc")


def parser() -> argparse.ArgumentParser:
    from .core.options import CATEGORIES

    top = argparse.ArgumentParser(prog="python -m neurok_blender", description=__doc__.splitlines()[0])
    commands = top.add_subparsers(dest="command", required=True)
    p = commands.add_parser("simulate", help="simulate and bake one file or a folder of files",
                            description="Simulate a mesh and bake its motion; see the README for the settings.")
    p.add_argument("input", type=Path, help="a .blend, .glb, .gltf or .obj file, or a folder of them")
    p.add_argument("--out", type=Path, required=True, help="a .blend, .glb, .gltf or .abc file (a folder for a folder)")
    p.add_argument("--format", choices=[e[1:] for e in OUTPUTS], default="blend",
                   help="what a folder's outputs are written as (default blend)")
    p.add_argument("--object", action="append", help="a mesh object to simulate; repeated, they are simulated "
                   "together (default: the file's only mesh, or a .blend's meshes that are no colliders, together)")
    p.add_argument("--frames", type=int, help="frames to simulate, the first shows the initial state")
    p.add_argument("--velocity", type=float, nargs=3, metavar=("X", "Y", "Z"), help="initial velocity, m/s")
    p.add_argument("--angular-velocity", type=float, nargs=3, metavar=("X", "Y", "Z"), help="initial spin, rad/s")
    p.add_argument("--gravity", type=float, nargs=3, metavar=("X", "Y", "Z"), help="the scene's gravity, m/s^2")
    ground = p.add_mutually_exclusive_group()
    ground.add_argument("--ground", type=float, metavar="HEIGHT", help="collide with a ground plane at this height")
    ground.add_argument("--no-ground", action="store_true", help="no ground plane")
    p.add_argument("--category", choices=list(CATEGORIES), help="the kind of body (default auto)")
    p.add_argument("--stiffness", type=float, help="1 is the category's default material")
    p.add_argument("--damping", type=float, help="1 is the category's default material")
    p.add_argument("--plasticity", type=float, help="1 is the category's default material, 0 never yields (nor resists rolling)")
    p.add_argument("--mass", type=float, help="total mass, kg")
    p.add_argument("--friction", type=float, help="Coulomb friction coefficient against the ground")
    p.add_argument("--bounciness", type=float, help="coefficient of restitution against the ground, 0..1: a body "
                                                     "dropped from h bounces back to bounciness^2 h (cloth: none)")
    p.add_argument("--drag", type=float, help="linear air drag per unit mass, 1/s")
    p.add_argument("--pin", metavar="GROUP", help="a vertex group of the object held where it is (a .blend's)")
    p.add_argument("--fps", type=float, help="frames per second of the scene (and the bake)")
    p.add_argument("--threads", type=int, help="CPU threads of the solver (default: the preferences', else 1)")
    p.add_argument("--bake-to", choices=["shape-keys", "point-cache"], help="how the motion is stored in a .blend")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=1, help="simulate this many files at once, each process on "
                                                              "its own (default 1: one after another)")
    where.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                       help="each file a Ray task (pip install ray): alone, Ray starts on this machine; 'auto' or "
                            "an address joins a running cluster, whose machines read INPUT and write OUTPUT")
    p.add_argument("--overwrite", action="store_true", help="redo a folder's outputs already written (default: skip them)")
    return top


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.threads is not None and args.threads < 1:
        raise SystemExit(f"--threads must be at least 1, got {args.threads}")
    if args.workers < 1:
        raise SystemExit(f"--workers must be at least 1, got {args.workers}")
    executor = Executor(ray=args.ray) if args.ray is not None else Executor(workers=args.workers)
    jobs = plan(args.input, args.out, args.format)
    if args.input.is_dir() and not args.overwrite:
        written = [job for job in jobs if job[1].exists()]
        if written:
            print(f"{len(written)} of {len(jobs)} outputs already written, skipped (--overwrite redoes them)", flush=True)
            jobs = [job for job in jobs if not job[1].exists()]
    task = functools.partial(simulate_job, args=args, verbose=executor.in_process)
    failed = []
    if len(jobs) > 1 and not executor.in_process:
        print(f"{len(jobs)} files on {executor}", flush=True)
    try:
        for done, ((source, target), outcome) in enumerate(run_all(task, jobs, executor, modules=_package()), 1):
            if isinstance(outcome, Failed):
                failed.append((source, outcome.error))
                print(f"[{done}/{len(jobs)}] {source.name} failed: {outcome.error}", flush=True)
                continue
            summary, seconds, told = outcome
            for text in told if not executor.in_process else ():  # in this process, printed as they came
                print(f"    {source.name}: {text}", flush=True)
            print(f"[{done}/{len(jobs)}] {source.name} -> {target}: {summary} ({seconds:.1f} s in all)", flush=True)
    except RuntimeError as error:  # Ray missing or out of reach (a task's own errors are its outcome)
        raise SystemExit(f"NeuROK: {error}") from None
    print(f"NeuROK: {len(jobs) - len(failed)} of {len(jobs)} simulated", flush=True)
    for source, reason in sorted(failed):
        print(f"  {source}: {reason}", flush=True)
    return 1 if failed else 0


def _package():
    import neurok_blender

    return [neurok_blender]


def plan(source: Path, out: Path, extension: str) -> list[tuple[Path, Path]]:
    """(input, output) pairs: one file, or each input file of a folder into the output folder."""
    if source.is_dir():
        files = sorted(p for p in source.iterdir() if p.suffix.lower() in INPUTS)
        if not files:
            raise SystemExit(f"{source} holds no {', '.join(INPUTS)} files")
        if out.suffix:
            raise SystemExit(f"a folder of inputs needs a folder to write into, not {out}")
        return [(p, out / f"{p.stem}.{extension}") for p in files]
    if not source.exists():
        raise SystemExit(f"{source} does not exist")
    if source.suffix.lower() not in INPUTS:
        raise SystemExit(f"cannot read {source.suffix or source.name}: use one of {', '.join(INPUTS)}")
    if out.suffix.lower() not in OUTPUTS:
        raise SystemExit(f"cannot write {out.suffix or out.name}: use one of {', '.join(OUTPUTS)}")
    return [(source, out)]


def simulate_job(job: tuple[Path, Path], args, verbose: bool) -> tuple[str, float, list[str]]:
    """Simulate one (input, output) pair in this process; (summary, seconds, what it told: a large
    bake's estimate). ``verbose`` prints as it goes (one file at a time); a worker's outcome carries
    it to the caller instead, as Ray does not show its workers' output."""
    began = time.perf_counter()
    source, target = job
    if verbose:
        print(f"{source.name} -> {target}", flush=True)
    told = []
    summary = simulate_file(source, target, args, verbose, told.append)
    return summary, time.perf_counter() - began, told


def simulate_file(source: Path, target: Path, args, verbose: bool, tell) -> str:
    import bpy

    from . import api
    from .preferences import solver_options

    _ensure_registered()
    load(source)
    bodies = pick_objects(args.object, source.suffix.lower() == ".blend")
    for obj in bodies:
        apply_settings(obj, bpy.context.scene, args)
    obj = bodies[0]
    bpy.context.view_layer.objects.active = obj
    total = obj.neurok.frame_end - obj.neurok.frame_start

    def progress(done, frames):
        if done == frames or done % max(1, frames // 10) == 0:
            print(f"    frame {done}/{frames}", flush=True)

    options = solver_options()
    if args.threads is not None:
        options = dataclasses.replace(options, threads=args.threads)
    def announce(text):
        tell(text)
        if verbose:
            print(f"    {text}", flush=True)

    progress = progress if total > 0 and verbose else None
    if len(bodies) > 1:
        summary = api.simulate_together(bodies, progress=progress, options=options, announce=announce)
    else:
        summary = api.simulate_object(obj, progress=progress, options=options, announce=announce)
    write(bodies, target)
    return summary


def write(bodies, target: Path) -> None:
    """Save ``bodies``' scene to ``target``, or export them, so that a stopped run never leaves a partial file
    a rerun would skip: Blender saves a .blend through a temporary file it renames; an export goes
    to a hidden folder beside the target, whose files then move in, the target last."""
    import bpy

    from .export import export_objects

    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix.lower() == ".blend":
        bpy.ops.wm.save_as_mainfile(filepath=str(target.resolve()), copy=True)
        return
    staging = target.parent / f".{target.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        export_objects(bodies, str(staging / target.name))
        for path in sorted(staging.iterdir(), key=lambda p: p.name == target.name):  # a .gltf's .bin first
            os.replace(path, target.parent / path.name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load(source: Path) -> None:
    import bpy

    path = str(source.resolve())
    suffix = source.suffix.lower()
    if suffix == ".blend":
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
        return
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if suffix == ".obj":
        bpy.ops.wm.obj_import(filepath=path)
    else:
        bpy.ops.import_scene.gltf(filepath=path)


def pick_objects(names: list[str] | None, every: bool) -> list:
    """The objects ``names`` (``--object``, in order), else the file's only mesh, else with ``every``
    (a .blend) its meshes that are no colliders (no Collision modifier), simulated together."""
    import bpy

    if names:
        missing = [name for name in names if bpy.data.objects.get(name) is None]
        if missing:
            raise ValueError(f"no object named '{missing[0]}'; the file has {_names(bpy.data.objects)}")
        return [bpy.data.objects[name] for name in dict.fromkeys(names)]
    meshes = [o for o in bpy.context.scene.objects if o.type == "MESH"]
    bodies = [o for o in meshes if not any(m.type == "COLLISION" for m in o.modifiers)]
    if len(meshes) == 1:
        return meshes
    if every and bodies:
        return bodies
    raise ValueError(f"the file has {len(meshes)} meshes ({_names(meshes)}): name one with --object, "
                     "or several (--object A --object B) to simulate them together")


def apply_settings(obj, scene, args) -> None:
    s = obj.neurok
    if args.frames is not None:
        if args.frames < 2:
            raise ValueError(f"--frames must be at least 2, got {args.frames}")
        s.frame_end = s.frame_start + args.frames - 1
    for name in ("velocity", "angular_velocity", "category"):
        if getattr(args, name) is not None:
            setattr(s, name, getattr(args, name))
    for flag in ("stiffness", "damping", "plasticity", "mass", "friction", "drag", "bounciness"):
        name = "restitution" if flag == "bounciness" else flag  # the panel's Bounciness
        value = getattr(args, flag)
        if value is not None:
            low, high = s.bl_rna.properties[name].hard_min, s.bl_rna.properties[name].hard_max
            if not low <= value <= high:  # Blender would clamp it without a word
                bounds = f"at least {low:g}" if high > 1e30 else f"in [{low:g}, {high:g}]"
                raise ValueError(f"--{flag} must be {bounds}, got {value}")
            setattr(s, name, value)
    if args.fps is not None:
        if not args.fps > 0:
            raise ValueError(f"--fps must be positive, got {args.fps}")
        scene.render.fps = max(1, round(args.fps))  # Blender's frame rate is fps / fps_base
        scene.render.fps_base = scene.render.fps / args.fps
    if args.gravity is not None:
        scene.use_gravity, scene.gravity = True, args.gravity
    if args.ground is not None:
        s.use_ground, s.ground_height = True, args.ground
    if args.no_ground:
        s.use_ground = False
    if args.bake_to is not None:
        s.output = args.bake_to.upper().replace("-", "_")
    if args.pin is not None:
        s.pin_group = args.pin


def _ensure_registered():
    import bpy

    if not hasattr(bpy.types.Object, "neurok"):
        from . import register

        register()


def _names(objects) -> str:
    return ", ".join(f"'{o.name}'" for o in objects) or "none"
