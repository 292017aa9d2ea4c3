"""Project scripts: building the extension, the demo. Not shipped in the add-on."""
