"""``mpnpu ut``: an operator repository's kernel unit tests (CPU-debug style: GmAlloc, ICPU_RUN_KF, gtest),
unchanged, built and run against mpnpu, as a conformance suite that says what each test needs that
mpnpu lacks.

One job per module:

    cmake     reading the CMake calls the test folders use (AddOpTestCase, set, add_custom_command)
    discover  finding the tests and the recipe each is built with (cmake/ut.cmake's AddOpTestCase)
    build     staging, compiling with an object cache, linking; several tests at a time
    missing   compiler and linker diagnostics -> missing names and headers at the user's file:line
    execute   running a test binary where the repository runs it; its gtest cases, memcheck, hazards
    results   per-test and corpus results; the table, JSON, JUnit and Markdown
    suite     the whole run: discover -> build (-j) -> run, as each test is built

``gtest/`` holds mpnpu's own test framework with GoogleTest's spelling (each case in a forked
process), which the builds use in place of GoogleTest.
"""
