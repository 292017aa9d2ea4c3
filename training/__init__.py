"""Training-side code: reference simulators, the 4D corpus, later the model's training.

Never shipped in the add-on (the extension build stages only ``neurok_blender``); its extra
packages are listed in ``training/requirements.txt``.
"""
