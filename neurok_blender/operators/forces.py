import bpy


class NEUROK_OT_force_add(bpy.types.Operator):
    """Add a force acting on the active object during a frame range"""

    bl_idname = "neurok.force_add"
    bl_label = "Add Force"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return context.active_object is not None

    def execute(self, context):
        settings = context.active_object.neurok
        force = settings.forces.add()
        force.frame_start = settings.frame_start
        force.frame_end = settings.frame_start + 5
        settings.active_force_index = len(settings.forces) - 1
        return {"FINISHED"}


class NEUROK_OT_force_remove(bpy.types.Operator):
    """Remove the selected force"""

    bl_idname = "neurok.force_remove"
    bl_label = "Remove Force"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and len(obj.neurok.forces) > 0

    def execute(self, context):
        settings = context.active_object.neurok
        settings.forces.remove(settings.active_force_index)
        settings.active_force_index = max(0, min(settings.active_force_index, len(settings.forces) - 1))
        return {"FINISHED"}
