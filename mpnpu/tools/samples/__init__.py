"""``mpnpu samples``: a dev kit's kernel samples, unchanged, built and run on mpnpu with their own data and
verify scripts (discover.py: which samples and their recipes; build.py: the host program against mpnpu;
run.py: the recipe in a run folder of its own; suite.py: all of them and the report)."""
