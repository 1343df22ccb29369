"""Generation: the inputs and contexts of a render, the renderer and the writer, the project's
configuration and layout, the output folders kvgen reads (``vendored``) and the families the
wheel carries (``shipped``).
"""
