"""Cloth and thin shells: Blender's own Cloth simulator run through the bpy module.

Blender Cloth was the fastest cloth measured here (3-5 s per 1.7k-vertex sequence, research note)
and collides with any mesh. Its parameters are Blender's own (the Cloth panel's units), so a
``ClothMaterial`` reads like a Blender preset. Two things Blender has no setting for are built:

- initial velocity: Blender starts cloth from rest, so ``PREROLL`` frames before frame 0 replace
  gravity by the uniform acceleration that reaches the velocity (a uniform acceleration leaves
  the shape unstressed). Blender's implicit steps and air drag make the speed reached differ from
  a t (measured 1.15 m/s for 2 m/s), so a first pass measures the mean velocity over the frame after
  release with gravity off and a second one scales the acceleration to match (all linear in a). The
  run-up carries the cloth as far as it goes in about a frame and a half, so the second pass starts
  that far behind: frame 0 is the mesh as given (before generator cloth-blender-2 it was that far
  ahead, up to 0.22 of the diagonal on the held-out sheets, where the solvers replayed from the mesh);
- the clock: Blender's cloth counts time in frames and takes 0.001 of the scene's gravity as its
  acceleration per frame squared, whatever the frame rate (measured: a sheet fell at 1.44, 5.7 and
  22.7 m/s^2 at 12, 24 and 48 fps), so the scene's gravity is set to g 1000 / fps^2. (Its speed
  multiplier did not scale cleanly: at sqrt(1000) / fps a sheet fell at 12.6 m/s^2 at 24 and 36 fps
  but 9.96 at 30, 50 and 60.) The material's springs and drag stay in Blender's per-frame units,
  so a material behaves as it does in Blender at the same frame rate;
- the step: every frame is simulated in order with ``frame_set``, which is what bakes the cache.

Pins (``Conditions.pins``) are Blender's own pin group: a vertex group of weight 1 named as the
cloth's pin group, whose vertices stay where the mesh puts them (a tablecloth held at two corners, a
flag on its pole). Not supported (clear errors): initial spin, point forces and pull, which Blender's
cloth can only approximate with force fields and pin groups, a pinned sheet thrown (its run-up would
pull the free part past the held one) and pins that move (``pin_path``). Runs pinned to one core repeat to ~1e-5 m; with
several threads and colliders Blender drifts by millimetres between runs (research note).
Each run starts from Blender's factory settings: call it in a process of its own (the corpus
workers, a script), never inside an artist's Blender session.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from neurok_blender.core import Conditions
from neurok_blender.core.mesh import check_mesh

PREROLL = 3  # frames of run-up that give the cloth its initial velocity
GROUND_SIZE = 100.0  # m across
CLOTH_DISTANCE, COLLIDER_THICKNESS = 0.006, 0.004  # m: the cloth rests this far above a surface
PIN_GROUP = "pins"  # the vertex group Blender's cloth holds in place (its Pin Group)


@dataclass(frozen=True)
class ClothMaterial:
    """Blender's Cloth settings, in its own units; defaults are its "Cotton" preset.

    Blender's cloth forces (springs, air drag) do not scale with the vertex mass: with the same
    settings at 0.03 kg per vertex a sheet stretched 16-30 % where it stretched 2 % at 0.3 kg, and at
    0.003 kg it sank at a quarter of the speed. So the vertex mass is a material setting here, as in
    Blender's presets (silk 0.15 to rubber 3 kg), and ``Conditions.mass`` only labels the recorded
    per-vertex masses: no force of this engine depends on it.
    """

    vertex_mass: float = 0.3
    tension: float = 15.0
    compression: float = 15.0
    shear: float = 15.0
    bending: float = 0.5
    air_damping: float = 1.0
    tension_damping: float = 5.0
    friction: float = 5.0  # colliders' cloth friction
    quality: int = 8  # solver steps per frame
    self_collision: bool = False


@dataclass
class ClothRun:
    positions: np.ndarray  # (frames, V, 3) float32, world
    strain: np.ndarray  # (frames, edges) edge length / rest length - 1
    velocity: np.ndarray  # (3,) the first pass's mean velocity over the frame after release, gravity off, m/s


def simulate_cloth(vertices, faces, material: ClothMaterial | None = None, conditions: Conditions | None = None,
                   colliders=()) -> ClothRun:
    """Simulate an open or closed surface as cloth; ``colliders`` are (vertices, faces) obstacles."""
    material = material or ClothMaterial()
    conditions = conditions or Conditions()
    vertices, faces = check_mesh(vertices, faces)
    conditions.check(len(vertices))
    if np.any(conditions.angular_velocity):
        raise ValueError("the cloth engine (Blender Cloth) cannot start a cloth spinning; set angular_velocity to 0")
    if conditions.forces or conditions.pull is not None:
        raise ValueError("the cloth engine (Blender Cloth) takes no point forces or pull; remove them")
    if conditions.pins is not None and (np.any(conditions.velocity) or conditions.pin_path is not None):
        raise ValueError("the cloth engine (Blender Cloth) holds pins where they are, from rest: "
                         "set velocity to 0 and pin_path to None")
    velocity = np.asarray(conditions.velocity, dtype=np.float64)
    preroll = PREROLL if velocity.any() else 0
    acceleration = velocity * conditions.fps / max(preroll, 1) * _gravity_scale(conditions.fps)
    reached, start = np.zeros(3), vertices
    if preroll:
        coasting = dataclasses.replace(conditions, gravity=(0.0, 0.0, 0.0))
        coast = _run(vertices, faces, material, coasting, colliders, acceleration, preroll, frames=2)
        reached = (coast[1] - coast[0]).mean(0) * conditions.fps
        scale = np.divide(velocity, reached, out=np.zeros(3), where=velocity != 0)
        acceleration = acceleration * scale
        start = vertices - (coast[0] - vertices).mean(0) * scale  # the run-up ends where the mesh was given
        if conditions.ground_height is not None and start[:, 2].min() < conditions.ground_height + CLOTH_DISTANCE:
            raise ValueError(f"thrown upwards at {velocity[2]:.2f} m/s, the cloth's run-up would start "
                             f"{conditions.ground_height + CLOTH_DISTANCE - start[:, 2].min():.3f} m too low, "
                             "in the ground: start it higher")
    positions = _run(start, faces, material, conditions, colliders, acceleration, preroll, conditions.frames)
    if not np.isfinite(positions).all():
        raise RuntimeError("Blender Cloth produced non-finite positions")
    edges = np.unique(np.sort(np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]]), axis=1), axis=0)
    rest = np.linalg.norm(vertices[edges[:, 0]] - vertices[edges[:, 1]], axis=1)
    lengths = np.linalg.norm(positions[:, edges[:, 0]] - positions[:, edges[:, 1]], axis=-1)
    return ClothRun(positions, lengths / rest - 1, reached)


def _run(vertices, faces, material, conditions, colliders, acceleration, preroll, frames):
    """One Blender run: ``preroll`` frames at ``acceleration`` (no gravity), then ``frames`` recorded
    from the release on. Returns positions (frames, V, 3)."""
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    _set_frame_rate(scene, conditions.fps)
    release = 1 + preroll  # Blender frame of frame 0; the cache starts at rest on frame 1
    scene.frame_start, scene.frame_end = 1, release + frames - 1

    cloth = _mesh_object(scene, "cloth", vertices, faces)
    modifier = cloth.modifiers.new("Cloth", "CLOTH")
    _configure(modifier, material)
    if conditions.pins is not None:
        group = cloth.vertex_groups.new(name=PIN_GROUP)
        group.add([int(i) for i in conditions.pins], 1.0, "REPLACE")
        modifier.settings.vertex_group_mass = PIN_GROUP
    modifier.point_cache.frame_start, modifier.point_cache.frame_end = scene.frame_start, scene.frame_end
    obstacles = list(colliders)
    if conditions.ground_height is not None:
        h, g = conditions.ground_height, GROUND_SIZE / 2
        obstacles.append((np.array([[-g, -g, h], [g, -g, h], [g, g, h], [-g, g, h]]), np.array([[0, 1, 2], [0, 2, 3]])))
    for i, (v, f) in enumerate(obstacles):
        collider = _mesh_object(scene, f"collider{i}", v, f).modifiers.new("Collision", "COLLISION")
        settings = collider.id_data.collision
        settings.thickness_outer, settings.cloth_friction = COLLIDER_THICKNESS, material.friction

    gravity = tuple(np.asarray(conditions.gravity) * _gravity_scale(conditions.fps))

    def run_up(scene, depsgraph=None):  # the step into frame f uses the gravity set at f
        scene.gravity = tuple(acceleration) if scene.frame_current <= release else gravity

    bpy.app.handlers.frame_change_pre.append(run_up)
    try:
        recorded = []
        for frame in range(1, release + frames):
            scene.frame_set(frame)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            mesh = cloth.evaluated_get(depsgraph).data
            co = np.empty(len(mesh.vertices) * 3)
            mesh.vertices.foreach_get("co", co)
            if frame >= release:
                recorded.append(co.reshape(-1, 3))
    finally:
        bpy.app.handlers.frame_change_pre.remove(run_up)
    return np.asarray(recorded, dtype=np.float32)


def _gravity_scale(fps: float) -> float:
    """Scene gravity per physical gravity: Blender's cloth accelerates by 0.001 g per frame squared."""
    return 1000.0 / fps**2


def _configure(modifier, material):
    s = modifier.settings
    s.mass = material.vertex_mass
    s.quality = material.quality
    s.tension_stiffness, s.compression_stiffness = material.tension, material.compression
    s.shear_stiffness, s.bending_stiffness = material.shear, material.bending
    s.air_damping = material.air_damping
    s.tension_damping = s.compression_damping = s.shear_damping = material.tension_damping
    c = modifier.collision_settings
    c.distance_min = CLOTH_DISTANCE
    c.use_self_collision = material.self_collision
    c.self_distance_min = CLOTH_DISTANCE


def _mesh_object(scene, name, vertices, faces):
    import bpy

    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(vertices, dtype=np.float64).tolist(), [], np.asarray(faces).tolist())
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    scene.collection.objects.link(obj)
    return obj


def _set_frame_rate(scene, fps):
    """Blender keeps fps as an integer over a float base."""
    whole = max(1, int(round(fps)))
    scene.render.fps, scene.render.fps_base = whole, whole / fps
