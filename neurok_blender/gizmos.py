"""Viewport arrows for the active object's forces and initial velocity; dragging a tip edits them.

Each arrow is a display-only arrow gizmo plus a move gizmo at its tip. The move gizmo is bound to an
RNA property (``NeurokForce.handle``, ``NeurokSettings.velocity_handle``: the vector at the arrow's
scale, ``properties.py``), so Blender pushes one undo step per drag and keyframes work as on the
field itself.
"""

from typing import NamedTuple

import bpy
import numpy as np
from mathutils import Matrix, Vector

from .preferences import hide_gizmos_in_playback
from .scene_io import vertex_group_indices

FORCE_COLOR = (1.0, 0.45, 0.1)
VELOCITY_COLOR = (0.2, 0.6, 1.0)


def gizmos_shown(context) -> bool:
    """The arrows show for the active mesh with its Gizmos toggle on, and not during playback if the
    preferences say so."""
    obj = context.active_object
    if obj is None or obj.type != "MESH" or not obj.neurok.show_gizmos:
        return False
    playing = context.screen is not None and context.screen.is_animation_playing
    return not (playing and hide_gizmos_in_playback())


def arrow_origins(obj) -> list[tuple[object, str, Vector]]:
    """(owner, handle property, world origin) for the velocity (at the bounding-box centre) and for
    each force (at its target object, or its vertex group's centroid); forces without a point are
    skipped."""
    corners = [obj.matrix_world @ Vector(c) for c in obj.bound_box]
    arrows = [(obj.neurok, "velocity_handle", sum(corners, Vector()) / 8)]
    co = None
    for force in obj.neurok.forces:
        if force.target is not None:
            arrows.append((force, "handle", force.target.matrix_world.translation.copy()))
            continue
        try:
            members = vertex_group_indices(obj, force.vertex_group)
        except ValueError:  # no group set yet, or an empty one: nothing to draw
            continue
        if co is None:
            co = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
            obj.data.vertices.foreach_get("co", co)
            co = co.reshape(-1, 3)
        arrows.append((force, "handle", obj.matrix_world @ Vector(co[members].mean(0))))
    return arrows


class Arrow(NamedTuple):
    shaft: object  # display-only arrow gizmo
    tip: object  # move gizmo bound to the handle property
    origin: Vector  # world, updated in refresh
    key: tuple[int, str]  # (owner pointer, handle property): rebuild when these change


class VIEW3D_GGT_neurok(bpy.types.GizmoGroup):
    bl_idname = "VIEW3D_GGT_neurok"
    bl_label = "NeuROK Arrows"
    bl_space_type = "VIEW_3D"
    bl_region_type = "WINDOW"
    bl_options = {"3D", "PERSISTENT"}

    @classmethod
    def poll(cls, context):
        return gizmos_shown(context)

    def setup(self, context):
        self.arrows = []
        self.refresh(context)

    def refresh(self, context):
        """Rebuild when forces were added or removed, then place every arrow."""
        origins = arrow_origins(context.active_object)
        if [(owner.as_pointer(), name) for owner, name, _ in origins] != [a.key for a in self.arrows]:
            for arrow in self.arrows:
                self.gizmos.remove(arrow.shaft)
                self.gizmos.remove(arrow.tip)
            self.arrows = [self._new_arrow(owner, name) for owner, name, _ in origins]
        for arrow, (_, _, point) in zip(self.arrows, origins):
            arrow.origin[:] = point
        self.draw_prepare(context)

    def draw_prepare(self, context):
        for shaft, tip, origin, _ in self.arrows:
            vector = Vector(tip.target_get_value("offset"))
            tip.matrix_basis = Matrix.Translation(origin)
            shaft.matrix_basis = Matrix.Translation(origin) @ (
                vector.to_track_quat("Z", "Y").to_matrix().to_4x4() if vector.length > 1e-9 else Matrix())
            shaft.length = vector.length
            shaft.hide = vector.length <= 1e-9

    def _new_arrow(self, owner, name):
        color = VELOCITY_COLOR if name == "velocity_handle" else FORCE_COLOR
        shaft = self.gizmos.new("GIZMO_GT_arrow_3d")
        shaft.hide_select = True  # drawn only: the tip is the handle
        shaft.color = color
        tip = self.gizmos.new("GIZMO_GT_move_3d")
        tip.target_set_prop("offset", owner, name)
        tip.draw_options = {"FILL", "ALIGN_VIEW"}
        tip.scale_basis = 0.1
        tip.color, tip.alpha = color, 0.6
        tip.color_highlight, tip.alpha_highlight = (1.0, 1.0, 1.0), 1.0
        return Arrow(shaft, tip, Vector(), (owner.as_pointer(), name))


CLASSES = (VIEW3D_GGT_neurok,)
