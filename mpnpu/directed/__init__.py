"""Race-directed runs: hazards made to happen for real by holding a core (:mod:`.confirm`), the sync
audit (:mod:`.audit`), and repairs verified by rerunning with the sync inserted (:mod:`.repair`).

Which pairs to hold and with which seeds is decided from traces alone, in
:mod:`mpnpu.racecheck.directed`; the holds themselves are the runtime's (:mod:`mpnpu.runtime.hold`).
"""
