"""The "NeuROK" tab of the 3D view's sidebar: Target, Conditions, Material, Simulation, Simulate, Result."""

import bpy

from . import job


class NEUROK_UL_forces(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        where = item.target.name if item.target else (item.vertex_group or "no point set")
        layout.label(text=f"{item.vector.length:.1f} N at {where}, frames {item.frame_start}-{item.frame_end}",
                     icon="FORCE_FORCE")


class _Section:
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "NeuROK"

    @classmethod
    def poll(cls, context):
        return context.active_object is not None and context.active_object.type == "MESH"

    def settings_column(self, context, keyframes=False):
        """The object's settings and a column of label-left fields (keyframe dots if ``keyframes``)."""
        self.layout.use_property_split = True
        self.layout.use_property_decorate = keyframes
        return context.active_object.neurok, self.layout.column()


class VIEW3D_PT_neurok(bpy.types.Panel):
    """The target; the sections below are sub-panels, the Simulate button after them."""

    bl_label = "NeuROK"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "NeuROK"

    def draw(self, context):
        layout = self.layout
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            layout.label(text="Select a mesh object", icon="INFO")
            return
        s = obj.neurok
        box = layout.box()
        box.label(text=obj.name, icon="MESH_DATA")
        if s.is_baked:
            kind = "point cache" if s.bake_modifier else "shape keys"
            box.label(text=f"Baked frames {s.bake_frame_start}-{s.bake_frame_end} ({kind})", icon="CHECKMARK")
        else:
            box.label(text="Not baked")


class VIEW3D_PT_neurok_conditions(_Section, bpy.types.Panel):
    bl_label = "Conditions"
    bl_parent_id = "VIEW3D_PT_neurok"

    def draw(self, context):
        obj, layout = context.active_object, self.layout
        s, col = self.settings_column(context, keyframes=True)  # velocities and force vectors are animatable
        col.label(text=f"Gravity from the scene: {context.scene.gravity.length:.2f} m/s²"
                  if context.scene.use_gravity else "Scene gravity is off", icon="SORT_ASC")
        col.prop(s, "use_ground")
        sub = col.column()
        sub.active = s.use_ground
        sub.prop(s, "ground_height")
        col.prop(s, "velocity")
        col.prop(s, "angular_velocity")
        col.prop(s, "show_gizmos", text="Viewport Arrows")

        layout.label(text="Forces")
        row = layout.row()
        row.template_list("NEUROK_UL_forces", "", s, "forces", s, "active_force_index", rows=2)
        ops = row.column(align=True)
        ops.operator("neurok.force_add", icon="ADD", text="")
        ops.operator("neurok.force_remove", icon="REMOVE", text="")
        if s.forces and 0 <= s.active_force_index < len(s.forces):
            force = s.forces[s.active_force_index]
            col = layout.column()
            col.prop(force, "vector")
            col.prop(force, "target")
            col.prop_search(force, "vertex_group", obj, "vertex_groups")
            col.prop(force, "frame_start")
            col.prop(force, "frame_end")

        layout.prop_search(s, "pin_group", obj, "vertex_groups", icon="PINNED")
        col = layout.column()
        col.prop(s, "use_pull")
        sub = col.column()
        sub.active = s.use_pull
        sub.prop_search(s, "pull_vertex_group", obj, "vertex_groups")
        sub.prop(s, "pull_offset")


class VIEW3D_PT_neurok_material(_Section, bpy.types.Panel):
    bl_label = "Material"
    bl_parent_id = "VIEW3D_PT_neurok"

    def draw(self, context):
        s, col = self.settings_column(context)
        col.prop(s, "category")
        sub = col.column()
        sub.active = s.category != "rigid"
        sub.prop(s, "stiffness")
        sub.prop(s, "damping")
        plastic = col.column()
        plastic.active = s.category in ("auto", "continuum", "articulated")  # those the shipped weights let yield
        plastic.prop(s, "plasticity")
        col.prop(s, "mass")
        col.prop(s, "friction")
        col.prop(s, "restitution")
        col.prop(s, "drag")


class VIEW3D_PT_neurok_simulation(_Section, bpy.types.Panel):
    bl_label = "Simulation"
    bl_parent_id = "VIEW3D_PT_neurok"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        s, col = self.settings_column(context)
        col.prop(s, "frame_start")
        col.prop(s, "frame_end")
        col.prop(s, "use_current_frame")
        col.prop(s, "integrator")
        col.prop(s, "substeps")
        col.prop(s, "sleep")
        col.prop(s, "output")
        addon = context.preferences.addons.get(__package__)
        if addon is not None:
            col.prop(addon.preferences, "threads")


class VIEW3D_PT_neurok_simulate(_Section, bpy.types.Panel):
    bl_label = "Simulate"
    bl_parent_id = "VIEW3D_PT_neurok"
    bl_options = {"HIDE_HEADER"}

    def draw(self, context):
        layout = self.layout
        solve = job.running()
        if solve is not None:
            layout.progress(factor=solve.done / max(solve.total, 1), type="BAR",
                            text=f"Simulating '{solve.job.name}': frame {solve.done}/{solve.total} (Esc cancels)")
        else:
            row = layout.row(align=True)
            row.scale_y = 1.5
            row.operator("neurok.simulate", icon="PHYSICS")
            row.operator("neurok.live", icon="PLAY")


class VIEW3D_PT_neurok_result(_Section, bpy.types.Panel):
    bl_label = "Result"
    bl_parent_id = "VIEW3D_PT_neurok"

    def draw(self, context):
        row = self.layout.row(align=True)
        row.operator("neurok.clear", icon="TRASH")
        row.operator("neurok.export", icon="EXPORT")


CLASSES = (NEUROK_UL_forces, VIEW3D_PT_neurok, VIEW3D_PT_neurok_conditions, VIEW3D_PT_neurok_material,
           VIEW3D_PT_neurok_simulation, VIEW3D_PT_neurok_simulate, VIEW3D_PT_neurok_result)
