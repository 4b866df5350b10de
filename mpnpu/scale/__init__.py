"""Scale-out: a sweep or soak cut into shards (:mod:`.shards`) that run in this process, in parallel
slots (:mod:`.slots`) or as Ray tasks (:mod:`.cluster`), chosen by :mod:`.backend`, and merged back
into one result. docs/scale-out.md tells the whole story.
"""
