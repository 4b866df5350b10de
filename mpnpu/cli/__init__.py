"""The ``mpnpu`` command line: argument flow only.

- :mod:`.options` — the one option table (every option defined once) and its argument types;
- :mod:`.command` — a subcommand: its options from the table, its parser, its run function;
- :mod:`.commands` — one module per subcommand (batch, investigate, stress, audit, soak);
- :mod:`.main` — ``mpnpu`` itself, ``python -m mpnpu``, and the aliases of earlier releases;
- :mod:`.outputs` — the report files a command writes (through :mod:`mpnpu.report`);
- :mod:`.common` — running a command to an exit status, progress bars.
"""
