"""The "NeuROK" tab of the 3D view's sidebar."""

import bpy


class NEUROK_UL_forces(bpy.types.UIList):
    def draw_item(self, context, layout, data, item, icon, active_data, active_propname, index):
        where = item.target.name if item.target else (item.vertex_group or "no point set")
        layout.label(text=f"{item.vector.length:.1f} N at {where}, frames {item.frame_start}-{item.frame_end}",
                     icon="FORCE_FORCE")


class VIEW3D_PT_neurok(bpy.types.Panel):
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
        layout.use_property_split = True
        layout.use_property_decorate = False

        box = layout.box()
        box.label(text=obj.name, icon="MESH_DATA")
        box.label(text=f"Baked frames {s.bake_frame_start}-{s.bake_frame_end}" if s.is_baked else "Not baked")

        col = layout.column(heading="Conditions")
        col.prop(s, "velocity")
        col.prop(s, "angular_velocity")
        col.prop(s, "use_ground")
        sub = col.column()
        sub.active = s.use_ground
        sub.prop(s, "ground_height")
        col.label(text=f"Gravity from the scene: {context.scene.gravity.length:.2f} m/s²"
                  if context.scene.use_gravity else "Scene gravity is off")

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

        col = layout.column(heading="Material")
        col.prop(s, "category")
        sub = col.column()
        sub.active = s.category != "rigid"
        sub.prop(s, "stiffness")
        sub.prop(s, "damping")
        col.prop(s, "mass")
        col.prop(s, "friction")
        col.prop(s, "restitution")
        col.prop(s, "drag")

        col = layout.column(heading="Simulation")
        col.prop(s, "frame_start")
        col.prop(s, "frame_end")
        col.prop(s, "use_current_frame")
        col.prop(s, "integrator")
        col.prop(s, "substeps")

        layout.operator("neurok.simulate", icon="PHYSICS")
        layout.operator("neurok.clear", icon="TRASH")


CLASSES = (NEUROK_UL_forces, VIEW3D_PT_neurok)
