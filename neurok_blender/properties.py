"""Per-object settings, ``obj.neurok``: what the sidebar shows and what a script sets."""

import bpy
from bpy.props import (BoolProperty, CollectionProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from .core.options import CATEGORIES, INTEGRATORS  # plain Python: registering the add-on loads no torch

# Gizmo scales: a force of one body weight is drawn as long as the body's diagonal, and a velocity as
# the way the body travels in VELOCITY_ARROW_TIME.
VELOCITY_ARROW_TIME = 0.25  # s
GRAVITY = 9.81  # m/s^2, for the force arrow's scale only


def metres_per_newton(obj) -> float:
    return max(obj.dimensions.length, 1e-3) / max(obj.neurok.mass * GRAVITY, 1e-6)


def _get_force_handle(self):
    k = metres_per_newton(self.id_data)
    return tuple(k * c for c in self.vector)


def _set_force_handle(self, value):
    k = metres_per_newton(self.id_data)
    self.vector = tuple(c / k for c in value)


def _get_velocity_handle(self):
    return tuple(VELOCITY_ARROW_TIME * c for c in self.velocity)


def _set_velocity_handle(self, value):
    self.velocity = tuple(c / VELOCITY_ARROW_TIME for c in value)


class NeurokForce(bpy.types.PropertyGroup):
    """A push on the body during a frame range, at an object's location or spread over a vertex group."""

    vector: FloatVectorProperty(name="Force (N)", subtype="XYZ", size=3, default=(0.0, 0.0, 0.0),
                                description="Force in newtons, world axes")
    target: PointerProperty(name="Target", type=bpy.types.Object,
                            description="Object whose location (when Simulate runs) is the application point; "
                                        "the body point there is pushed and the force follows it")
    vertex_group: StringProperty(name="Vertex Group",
                                 description="Spread the force evenly over this group's vertices "
                                             "(used when no target object is set)")
    frame_start: IntProperty(name="Start", default=1, description="First frame the force acts on")
    frame_end: IntProperty(name="End", default=5, description="Frame at which the force stops")
    handle: FloatVectorProperty(name="Arrow", subtype="TRANSLATION", size=3, get=_get_force_handle,
                                set=_set_force_handle, options={"HIDDEN", "SKIP_SAVE"},
                                description="The force as the viewport arrow draws it (the gizmo edits this)")


class NeurokSettings(bpy.types.PropertyGroup):
    frame_start: IntProperty(name="Start", default=1,
                             description="Frame that shows the initial state: the object as it is when Simulate runs")
    frame_end: IntProperty(name="End", default=96, description="Last simulated frame")
    use_current_frame: BoolProperty(name="Start at Current Frame", default=False,
                                    description="Start from the scene's current frame instead of Start")
    velocity: FloatVectorProperty(name="Velocity", subtype="VELOCITY", unit="VELOCITY", size=3,
                                  description="Initial linear velocity of the centre of mass, world axes (m/s)")
    velocity_handle: FloatVectorProperty(name="Velocity Arrow", subtype="TRANSLATION", size=3,
                                         get=_get_velocity_handle, set=_set_velocity_handle,
                                         options={"HIDDEN", "SKIP_SAVE"},
                                         description="The velocity as the viewport arrow draws it (the gizmo edits this)")
    show_gizmos: BoolProperty(name="Gizmos", default=True,
                              description="Show arrows for the forces and the initial velocity in the viewport; "
                                          "drag their tips to edit them")
    angular_velocity: FloatVectorProperty(name="Angular Velocity (rad/s)", subtype="XYZ", size=3,
                                          description="Initial spin about the centre of mass, world axes (rad/s)")
    pin_group: StringProperty(name="Pin", description="Vertex group held where it is for the whole simulation, or "
                                                     "where the object's animation and Hook modifiers take it (one "
                                                     "vertex: a ball joint, two: a hinge); empty pins nothing")
    use_pull: BoolProperty(name="Pull and Release", default=False,
                           description="Start with a vertex group pulled away from the rest shape, let go at "
                                       "the start frame: the body snaps back and wobbles")
    pull_vertex_group: StringProperty(name="Handle", description="Vertex group that is held and pulled")
    pull_offset: FloatVectorProperty(name="Pull", subtype="TRANSLATION", unit="LENGTH", size=3,
                                     default=(0.0, 0.0, 0.1),
                                     description="How far the handle is pulled, world axes")
    mass: FloatProperty(name="Mass", default=1.0, min=0.0, soft_min=0.001, soft_max=1000.0, unit="MASS",
                        description="Total mass; spread by volume for closed meshes, by area for open ones. "
                                    "A heavier solid of the same stiffness wobbles slower (four times the mass, "
                                    "half as fast)")
    category: EnumProperty(name="Category", default="auto",
                           items=[(k, k.capitalize(), v) for k, v in CATEGORIES.items()],
                           description="What kind of body this is; the learned model deforms it accordingly")
    stiffness: FloatProperty(name="Stiffness", default=1.0, min=1e-3, soft_max=100.0,
                             description="Scales how strongly the body resists deformation: 1 is the "
                                         "category's default material, 4 oscillates twice as fast (an "
                                         "elastic solid's wobble also dies four times as fast); a solid "
                                         "of it wobbles slower the heavier or larger it is, a soft "
                                         "continuum body lands on a ground that gives with it, and a "
                                         "softer articulated object bends its parts, not its joints")
    damping: FloatProperty(name="Damping", default=1.0, min=0.0, soft_max=20.0,
                           description="Scales how quickly the body's wobble dies out: 1 is the category's "
                                       "default material, 0 wobbles forever")
    plasticity: FloatProperty(name="Plasticity", default=1.0, min=0.0, soft_max=20.0,
                              description="Scales how easily the body keeps a dent: 1 is the category's "
                                          "default material (continuum bodies flow and, flattening where "
                                          "they land, resist rolling; articulated ones keep the pose their "
                                          "joints were bent to; the others spring back), 2 yields at half "
                                          "the strain, 0 never")
    use_ground: BoolProperty(name="Ground", default=True, description="Collide with a horizontal ground plane")
    ground_height: FloatProperty(name="Height", default=0.0, unit="LENGTH",
                                 description="Height of the ground plane (world Z)")
    friction: FloatProperty(name="Friction", default=0.5, min=0.0, soft_max=2.0,
                            description="Coulomb friction coefficient against the ground")
    restitution: FloatProperty(name="Bounciness", default=0.3, min=0.0, max=1.0,
                               description="Coefficient of restitution against the ground: the body leaves "
                                           "each impact at this fraction of the speed it hit with, so dropped "
                                           "from a height it bounces back to Bounciness squared of it (0.5: "
                                           "a quarter). Cloth does not bounce")
    drag: FloatProperty(name="Air Drag", default=0.0, min=0.0, soft_max=5.0,
                        description="Linear air drag per unit mass (1/s)")
    integrator: EnumProperty(name="Integrator", default="auto",
                             items=[(k, k.capitalize(), v) for k, v in INTEGRATORS.items()],
                             description="Time integration method")
    substeps: IntProperty(name="Substeps", default=0, min=0, soft_max=200,
                          description="Integration steps per frame; 0 picks them from the stiffest spring")
    sleep: BoolProperty(name="Sleep at Rest", default=True,
                        description="A body that has come to rest stops being simulated until a force acts on "
                                    "it (its frames repeat): the same motion, much faster when it lies still")
    output: EnumProperty(name="Bake To", default="SHAPE_KEYS",
                         items=[("SHAPE_KEYS", "Shape Keys", "One shape key per frame, stored in the .blend; "
                                 "exports to glTF morph targets"),
                                ("POINT_CACHE", "Point Cache", "A PC2 file in the cache folder played by a Mesh "
                                 "Cache modifier: a light .blend for long or heavy bakes")],
                         description="How the motion is stored")
    forces: CollectionProperty(type=NeurokForce)
    active_force_index: IntProperty(name="Active Force", default=0)

    # Bookkeeping of the last bake, so Clear removes exactly what Simulate made
    is_baked: BoolProperty(name="Baked", default=False, options={"HIDDEN"})
    bake_frame_start: IntProperty(options={"HIDDEN"})
    bake_frame_end: IntProperty(options={"HIDDEN"})
    bake_keys: StringProperty(options={"HIDDEN"}, description="Names of the baked shape keys, one per line")
    bake_created_basis: BoolProperty(options={"HIDDEN"})
    bake_action: PointerProperty(type=bpy.types.Action, options={"HIDDEN"},
                                 description="The action the bake created, if it created one")
    bake_modifier: StringProperty(options={"HIDDEN"}, description="The Mesh Cache modifier of a point-cache bake")
    baked_hooks: StringProperty(options={"HIDDEN"}, description="The Hook modifiers the bake turned off, one per line")
    bake_cache_file: StringProperty(options={"HIDDEN"}, subtype="FILE_PATH",
                                    description="The PC2 file of a point-cache bake")


CLASSES = (NeurokForce, NeurokSettings)


def attach():
    bpy.types.Object.neurok = PointerProperty(type=NeurokSettings)


def detach():
    del bpy.types.Object.neurok
