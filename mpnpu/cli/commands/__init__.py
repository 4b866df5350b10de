"""The subcommands of ``mpnpu``: every module here that defines ``COMMAND`` is one
(:func:`mpnpu.cli.main.commands`). A module only turns arguments into a library call and its
result into reports: the work is the library's (:mod:`mpnpu.harness`, :mod:`mpnpu.directed`,
:mod:`mpnpu.scale`), the presentation :mod:`mpnpu.report`'s."""
