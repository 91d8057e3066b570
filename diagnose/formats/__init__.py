"""Pure converters between the tools' output formats and the bundle's tables.

No I/O beyond the text or objects passed in, so each is tested on recorded real output.
The common currency is a *stack*: a tuple of frame strings, root first, each frame
``name (file:line)`` for Python or ``symbol (library)`` for native code.
"""
